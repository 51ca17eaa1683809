//! The sentence rules of [`super::judge`]. Every pattern is case-insensitive and runs on
//! cleaned text; word lists are kept here, one per idea, so a rule reads as its sentence.

use std::sync::LazyLock;

use regex::Regex;

use super::layers::{self, Layer};
use super::{EXCERPT_CHARS, Sign, SignKind, TextRole};
use crate::credentials::find_credentials;
use crate::peer_text::PeerLine;

fn pattern(source: &str) -> Regex {
    Regex::new(&format!("(?i){source}")).expect("a valid pattern")
}

macro_rules! patterns {
    ($($(#[$doc:meta])* $name:ident = $source:expr;)*) => {
        $($(#[$doc])* static $name: LazyLock<Regex> = LazyLock::new(|| pattern(&$source));)*
    };
}

/// Verbs that move data, in their base form.
const FLOW_VERBS: &str = "read|open|load|cat|include|append|attach|pass|put|paste|copy|send|\
    forward|post|upload|submit|supply|provide|fill|collect|gather|harvest|dump|print|add|insert|\
    embed|place|share|give|mirror|transmit|leak|exfiltrate|write|store|save|export|sync|extract|\
    grab|fetch|retrieve|echo|set|deliver|relay|push|publish|encode|enumerate|list|email|mail|bcc|cc|\
    call|use|return|output|report|log|look up";

/// Verbs too common in plain instructions to move a secret on their own: they count for the
/// user's own secrets only.
const WEAK_FLOW_VERBS: &[&str] = &["set", "use", "call", "return", "output", "report", "log"];

/// Words after which a base-form verb stands as an order.
const ORDER_CONTEXT: &str = r"(?:^|[\n:;,(|>*\[]|\b(?:you|please|must|should|shall|also|first|then|and|but|now|always|never|just|simply|immediately|next|kindly|additionally|afterwards|finally|instead|remember to|sure to|forget to|need to|needs to|have to|has to|required to|want to|\w+ly)\b)\s*";

patterns! {
    /// A data-flow verb where an order stands.
    FLOW_ORDER = format!(r"{ORDER_CONTEXT}(?:(?:also|then|first|always|just|silently|quietly|secretly)\s+)?\b({FLOW_VERBS})\b");
    /// A data-flow verb in any form (names and values read as words).
    FLOW_ANY = format!(r"\b(?:(?:{FLOW_VERBS})(?:s|es|ed|d|ing)?|sent|putting|sending|read(?:ing)?)\b");
    /// Secret stores named on their own: credential files, key files, keychains.
    SECRET_STORE = r"~/\.ssh\b|\.ssh/|\bid[_ ](?:rsa|ed25519|ecdsa|dsa)\b|\.aws/credentials|\baws[_ ]secret[_ ]access[_ ]key\b|/etc/(?:passwd|shadow)\b|\.netrc\b|\.pgpass\b|\.git-credentials\b|\.npmrc\b|\.pypirc\b|\bgh/hosts\.ya?ml\b|\.config/gh\b|application[_ ]default[_ ]credentials|\.docker/config\.json|\.kube/config\b|\bmcp\.json\b|claude[_ ]desktop[_ ]config|\.(?:bash|zsh)_history\b|\bkeychain\b|\blogin data\b|\bsaved passwords\b|\bpassword manager\b|\bseed phrase\b|\bwallet\.dat\b|\bpem (?:block|file)s?\b";
    /// Secrets a sentence must also ask to move.
    SECRET = r"(?:^|[\s(`'\x22])\.env\b|\benv[ _]files?\b|\bdotenv\b|\bprivate[ _-]?keys?\b|\bssh[ _-]?keys?\b|\bsecret[ _-]?(?:access[ _-]?)?keys?\b|\bapi[ _-]?keys?\b|\baccess[ _-]?keys?\b|\bcredentials?\b|\bsecrets\b|\bthe secret\b|\bpassphrases?\b|\b(?:auth|oauth|access|bearer|refresh|session|github|gh|npm|api)[ _-]?tokens?\b|\b[a-z0-9]+_(?:key|token|secret)s?\b|\b(?:key|token)s? (?:or|and) (?:key|token)s?\b|\b(?:environment|env)[ _-]?(?:variables?|vars?)\b|\bcookies\b|\bsession (?:ids?|cookies)\b|\b(?:every|all|any) secrets?\b|\b(?:user'?s|their) (?:[\w-]+ ){0,2}(?:keys?|tokens?|passwords?)\b|\.bashrc\b|\.zshrc\b|\.profile\b|\bshell profile\b";
    /// The model's own context: never a tool's to ask for.
    MODEL_CONTEXT = r"\bsystem[ _-]?prompt\b|\b(?:hidden|developer|system|internal|initial) instructions\b";
    /// The user's conversation.
    CONVERSATION = r"\b(?:entire|full|whole|complete) (?:conversation|chat|transcript)\b|\bconversation (?:history )?(?:so far|with the user)\b|\b(?:this|the current|our|your) conversation\b|\bconversation history\b|\bchat history\b|\b(?:previous|earlier|prior) messages\b|\bwhat the user (?:told|said|wrote|typed|asked|shared)\b|\bfiles (?:they|the user) (?:shared|uploaded)\b";
    /// What the user just said: a search tool may take it; a URL or an address may not.
    USER_MESSAGE = r"\buser'?s (?:latest |last |most recent |full |whole |entire |original )?(?:message|messages|question|request|input|prompt|query)\b|\bwhat the user (?:told|said|wrote|typed|asked)\b";
    /// A secret asked for as a parameter's value: the user's, or all of them.
    WHOSE_SECRET = r"\b(?:the user'?s|user'?s|all|every|any|their|all of the)\s+(?:\w+\s+){0,3}?(?:private[ _-]?keys?|ssh[ _-]?keys?|api[ _-]?keys?|secret|secrets|credentials?|passwords?|tokens?|cookies|environment variables?|env vars?|conversation|messages|system prompt|email address(?:es)?|phone numbers?|home address|credit cards?|card numbers?)\b";
    /// A remote image: rendering it calls its host.
    REMOTE_IMAGE = r"!\[[^\]\n]*\]\s*(?:\(\s*(?:https?:)?//|\[)|<img\b[^>]*\bsrc\s*=";
    /// A URL with a slot in its query for data to be filled in.
    URL_WITH_SLOT = r#"(?:https?:)?//[^\s)\]]+[?&][\w.-]*=(?:\{[^}]*\}|<[^>]*>|[A-Z][A-Z_]{2,}(?:[&\s)"'`]|$)|[\s)"'`]|$)"#;
    /// A URL.
    URL = r"\bhttps?://\S+|(?:^|\s)//[\w-]+\.[\w.-]+/\S*|\b[\w-]+(?:\.[\w-]+)*\.(?:com|net|org|io|app|dev|xyz|co|ru|cn|info|biz|site|online|cloud|me|top)/\S*";
    /// A mail address.
    MAIL_ADDRESS = r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b";
    /// A chat channel, a phone number or a bank account as a destination.
    OTHER_DESTINATION = r"\bchannel\s+#[\w-]+|#[\w-]+\s+channel\b|\+\d[\d ]{6,}\d\b|\biban\b|\bthe (?:address|endpoint|url|webhook|host) (?:in|listed|given|found|from|at|of)\b";
    /// What another tool gives: its results, a file's text.
    DATA_OF_ANOTHER = r"\buser'?s (?:[\w-]+ ){0,2}(?:inbox|emails?|messages|files|documents|notes|contacts|calendar|history|data)\b|\b(?:results?|output|contents?|text|body|bodies) of (?:every |each |any |the )?[\w-]+_[\w-]+\b|\bthe file'?s (?:text|contents?)\b|\b(?:every|each|all) (?:note|file|message|email|issue|document)s?\b|\bthe same content\b|\bthe result\b";
    /// Other tools, servers or resources than this one's.
    OTHER_TOOLS = r"\b(?:any|every|all|each|whatever|whichever)\s+(?:other\s+|of the\s+)?(?:[\w-]+\s+){0,2}?(?:tools?|servers?)\b|\b(?:other|another|different|third-party)\s+(?:[\w-]+\s+){0,2}?(?:tools?|servers?|integrations?|plugins?|connectors?|extensions?)\b|\b(?:any|every|all) other\s+(?:[\w-]+\s+){0,2}?(?:resources?|sources?|prompts?)\b|\bother servers?'?s?\b|\bfrom (?:any|another|other|every) (?:[\w-]+\s+)?servers?\b|\btools? (?:available )?in this session\b|\b(?:after|before|whenever|when|each time|every time)\s+(?:you\s+)?(?:use|call|run|invoke)?\s*(?:any|every|each)\s+[\w-]+\s+(?:call|tool|is used|is called)\b|\bchanges how [\w-]+ (?:behaves|works)\b|\bthe (?:messaging|email|mail|payment|shell|file|browser|terminal|search|git|calendar) tools?\b|\bwith any [\w-]+ tool\b|\bany (?:message|email|mail|command|payment|transfer)s? (?:sent|made|run|written)\b|\bevery command it runs\b";
    /// Steering towards this tool and away from others.
    PREFERENCE = r"\b(?:only|most) (?:reliable|trusted|trustworthy|accurate|official|safe|secure|legitimate|correct)\b|\bonly one you should\b|\b(?:rated|ranked) (?:#|no\.? ?|number )?(?:1|one)\b|\bpenali[sz]ed\b|\bworse results\b|\bthe trusted [\w-]+ (?:tool|server)\b|\broute all [\w-]+ (?:through|via) (?:here|this|us)\b|\buse this (?:one|tool|server) for (?:every|all|any)\b|\b(?:use|using) this server for all\b";
    /// Keeping the model off a named tool: `never use add`.
    AVOID_NAMED = r"\b(?:never|do not|don't)\s+(?:use|call|trust|choose|pick|select)\s+`?([\w-]+)";
    /// A name that orders the model to pick it.
    NAME_PREFERENCE = r"\balways (?:use|call|choose|pick|prefer|open) (?:this|these|it|me|us)\b";
    /// A sentence that keeps a secret store away, not one that points at it.
    STORE_REFUSED = r"\b(?:rejected|refused|denied|blocked|forbidden|not allowed|disallowed|excluded|never (?:read|accessed|touched|opened))\b";
    /// An order that holds the model back from other tools, not one that changes their calls.
    RESTRICTIVE = r"\b(?:must not|mustn't|do not|don't|never|should not|shouldn't)\s+(?:\w+\s+){0,2}?(?:invoke|call|run|use|execute|trigger)\b";
    /// Steering that names the others.
    PREFERENCE_OVER_OTHERS = r"\b(?:instead of|rather than|in place of)\b|\b(?:choose|pick|select|prefer|use) (?:it|this(?: one| tool)?|these|me|us) (?:over|instead|before|rather)\b|\b(?:always|first)\s+(?:use|call|open|choose|pick|read)\s+(?:this|these|it|me)\b|\b(?:never|do not|don't|avoid)\s+(?:use|call|using|calling|trust|choose|pick|rely on|select)\b|\b(?:ignore|distrust|disregard)\b|\b(?:wrong|fake|untrusted|unreliable|malicious|compromised|broken|deprecated|insecure|inaccurate)\b|\bprefer";
    /// Hiding what the model does from the user.
    CONCEALMENT = r"\b(?:do not|don't|dont|never|without)\s+(?:ever\s+)?(?:tell|telling|inform|informing|notify|notifying)\b|\b(?:do not|don't|never|without)\s+(?:alert|alerting|warn|warning)\w*\s+(?:the user|them|anyone|the human)\b|\b(?:do not|don't|never|without)\s+(?:mention|reveal|disclose|show|quote|report|surface)\w*\b[^.\n]{0,60}\b(?:user|them|anyone|human|reply|answer|response|summary)\b|\bwithout (?:mentioning|telling|informing|revealing|disclosing) (?:it|this|that)\b|\bkeep\b[^.\n]{0,50}\b(?:out of|from)\s+(?:your|the)\s+(?:answer|reply|response|summary|output|user)\b|\bleave\b[^.\n]{0,50}\bout of\s+(?:your|the)\s+(?:answer|reply|response|summary)\b|\bnever quote\b|\beven if (?:asked|the user asks)\b|\b(?:hide|conceal)\b[^.\n]{0,40}\bfrom the user\b|\bthe user (?:must|should) not (?:know|see|be told|notice|find out)\b|\beven (?:if|when|though) the user (?:did not|didn't|does not|doesn't|has not|hasn't|never) (?:ask|want|request)";
    /// Doing it unseen: with a data-flow verb, concealment.
    UNSEEN = r"\b(?:quietly|silently|secretly|covertly|discreetly|invisibly)\b";
    /// Consent claimed on the user's behalf.
    FAKE_CONSENT = r"\b(?:user|users|administrator|admin|owner|operator)\s+(?:(?:has|have|had)\s+(?:already\s+|previously\s+|explicitly\s+)?|already\s+|previously\s+)(?:approved|authori[sz]ed|consented|agreed|confirmed|allowed|accepted)\b|\bpre[- ]?(?:approved|authori[sz]ed|confirmed|consented|cleared)\b|\b(?:consent|permission|approval|authori[sz]ation)\b[^.\n]{0,60}\b(?:was|has been|have been|is|were)\s+(?:already\s+)?(?:given|granted|obtained|provided|implied)\b|\bno need to (?:confirm|ask|check|verify)\b|\b(?:skip|never|do not|don't)\s+(?:asking|ask|requesting|request|seeking|seek|waiting for|wait for)\s+(?:the user\s+)?(?:for\s+)?(?:confirmation|approval|permission|consent)\b|\bskip (?:asking|confirming|checking with)\b|\b(?:skip|never|do not|don't) (?:confirm|confirming) with the user\b|\bact without\b|\b(?:user|users|administrator|admin|owner)\s+(?:approved|authori[sz]ed|consented|agreed|confirmed|allowed|accepted)\b[^.\n]{0,60}\b(?:in advance|ahead of time|beforehand|already|earlier|previously)\b";
    /// Acting without asking: with an order, fake consent.
    UNASKED = r"\bwithout (?:asking|confirmation|confirming|checking back|approval|permission)\b";
    /// Markers addressed to the model.
    ADDRESSED = r"<\s*/?\s*(?:important|system|instructions?|system_important|secret|admin)\b|\[(?:important|system|admin)\]|\*\*important\*\*|^\W*(?:assistant|model|ai|agent|llm)\s*:|\bnote (?:to|for) the (?:assistant|model|ai|agent|llm)\b|\bguidance for the (?:assistant|model|agent)\b";
    /// Turning the model against its user or its instructions.
    OVERRIDE = r"\bignore (?:what|whatever) the user\b|\bignore (?:the user|previous|all previous|prior|all prior|your (?:previous|prior|instructions|rules))\b|\bignore all (?:previous|prior|other) instructions\b|\bdisregard (?:the user|previous|all previous|your)\b";
    /// An order to decode hidden text, and one to follow it.
    DECODE = r"\b(?:decode|decoded|decoding|reverse|reversed|unescape|base64|hex|rot13|percent[ _-]?encoded|encoded)\b";
    FOLLOW = r"\b(?:follow|apply|act on|carry (?:it |them )?out|execute|obey|run it|do what|perform|comply)\b";
    /// A download piped into a shell.
    REMOTE_CODE = r"\b(?:curl|wget)\b[^|\n]{0,200}\|\s*(?:ba|z)?sh\b";
    /// Where a result's order would put a secret: a call, a parameter, a tool.
    CALL_TARGET = r"\b(?:parameter|argument|field|tool|call|request)s?\b|\b[a-z]+_[a-z_]+\b";
    /// Data said to go somewhere.
    MOVED = r"\b(?:go|goes|should go|must go|are sent|is sent|gets? sent|be sent|are posted|be posted|are copied|be copied)\s+to\b";
    /// Orders that rewrite another tool's call.
    REWRITE = r"\bmust be (?:replaced|prefixed|changed|redirected|rerouted|copied|sent)\b|\bmust (?:go|be sent) to\b|\b(?:also|always|then) (?:write|send|copy|forward|add|cc|bcc|pass)\b|\b(?:add|put|include)\b[^.\n]{0,60}\b(?:bcc|cc)\b|\bbcc\b|\bprefix(?:ed)? (?:with|by)\b";
}

/// Sentences of a cleaned text: cut at `.`, `!` or `?` before a space, line breaks and `; `.
fn sentences(text: &str) -> impl Iterator<Item = &str> {
    static BREAK: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"[.!?]+(?:\s+|$)|\n+|;\s+").expect("a valid pattern"));
    BREAK
        .split(text)
        .map(str::trim)
        .filter(|sentence| !sentence.is_empty())
}

/// What matched, quoted for a reason (`~/.ssh`), credentials masked.
fn quoted(found: regex::Match<'_>) -> String {
    format!("`{}`", PeerLine(&masked(found.as_str().trim())))
}

/// `text` with credential-looking strings replaced by `<credential>`: a finding never
/// repeats a secret.
fn masked(text: &str) -> String {
    let mut masked = text.to_owned();
    for found in find_credentials(text).iter().rev() {
        if masked.is_char_boundary(found.start) && masked.is_char_boundary(found.end) {
            masked.replace_range(found.start..found.end, "<credential>");
        }
    }
    masked
}

/// A sentence cut for a finding: credentials masked ([`masked`]), then cut, with what
/// cannot be shown escaped.
fn excerpt(sentence: &str) -> String {
    let masked = masked(sentence);
    let mut cut: String = masked.chars().take(EXCERPT_CHARS).collect();
    if masked.chars().nth(EXCERPT_CHARS).is_some() {
        cut.push('…');
    }
    PeerLine(&cut).to_string()
}

struct Judged<'a> {
    signs: &'a mut Vec<Sign>,
    layer: Layer,
    sentence: &'a str,
}

impl Judged<'_> {
    fn sign(&mut self, kind: SignKind, reason: String) {
        let excerpt = excerpt(self.sentence);
        if !self
            .signs
            .iter()
            .any(|sign| sign.kind == kind && sign.excerpt == excerpt)
        {
            self.signs.push(Sign {
                kind,
                excerpt,
                layer: self.layer,
                reason,
            });
        }
    }
}

/// Every sentence of one layer of a text.
pub(super) fn judge_layer(text: &str, layer: Layer, role: TextRole, signs: &mut Vec<Sign>) {
    for sentence in sentences(text) {
        if signs.len() >= super::MAX_SIGNS {
            return;
        }
        let mut judged = Judged {
            signs,
            layer,
            sentence,
        };
        judge_sentence(sentence, role, &mut judged);
    }
}

fn judge_sentence(sentence: &str, role: TextRole, judged: &mut Judged<'_>) {
    let named = matches!(role, TextRole::Identifier | TextRole::Value);
    let long_name = named && sentence.split_whitespace().count() >= 5;
    // A sentence addressed to the model ("Model: …", `<IMPORTANT>`) orders in any form.
    let addressed = ADDRESSED.is_match(sentence);
    let flow = if long_name || addressed {
        FLOW_ANY.find(sentence)
    } else {
        FLOW_ORDER.captures(sentence).and_then(|found| found.get(1))
    };
    let flow_any = FLOW_ANY.find(sentence);

    if let Some(store) = SECRET_STORE.find(sentence)
        && (flow.is_some() || (role != TextRole::Result && !STORE_REFUSED.is_match(sentence)))
    {
        match flow {
            Some(verb) => judged.sign(
                SignKind::Exfiltration,
                format!(
                    "asks the model to {} {}: a tool's text must never ask for the user's secrets",
                    verb.as_str().to_lowercase(),
                    quoted(store)
                ),
            ),
            None => judged.sign(
                SignKind::Order,
                format!(
                    "names the secret store {}: a tool's text has no reason to point a model at it",
                    quoted(store)
                ),
            ),
        }
    }
    if let Some(context) = MODEL_CONTEXT.find(sentence)
        && flow_any.is_some()
    {
        judged.sign(
            SignKind::Exfiltration,
            format!("asks for the model's {}: no tool needs it", quoted(context)),
        );
    }
    // In a result (a fetched page, a README), "copy .env.example to .env" is a how-to; a
    // secret moved into a call, a tool or out is an order.
    let aimed = role != TextRole::Result
        || addressed
        || CALL_TARGET.is_match(sentence)
        || MAIL_ADDRESS.is_match(sentence)
        || URL.is_match(sentence);
    let secret = SECRET
        .find(sentence)
        .or_else(|| CONVERSATION.find(sentence))
        .filter(|_| aimed);
    if let Some(secret) = secret {
        let weak = flow
            .is_some_and(|verb| WEAK_FLOW_VERBS.contains(&verb.as_str().to_lowercase().as_str()));
        let flow = flow.filter(|_| !weak || WHOSE_SECRET.is_match(sentence));
        if let Some(verb) = flow {
            judged.sign(
                SignKind::Exfiltration,
                format!(
                    "asks the model to {} {}: a tool's text must not move the user's secrets or \
                     conversation",
                    verb.as_str().to_lowercase(),
                    quoted(secret)
                ),
            );
        } else if matches!(role, TextRole::Parameter | TextRole::Value)
            && let Some(whose) = WHOSE_SECRET.find(sentence)
        {
            judged.sign(
                SignKind::Exfiltration,
                format!(
                    "asks for {} as a parameter's value: the model would hand them to the server",
                    quoted(whose)
                ),
            );
        }
    }
    if let Some(image) = REMOTE_IMAGE.find(sentence) {
        judged.sign(
            SignKind::Exfiltration,
            format!(
                "has a remote image {}: a client that renders it sends what its URL carries to that host",
                quoted(image)
            ),
        );
    }
    if let Some(url) = URL_WITH_SLOT.find(sentence)
        && (named
            || role == TextRole::Parameter
            || flow.is_some()
            || CONVERSATION.is_match(sentence)
            || USER_MESSAGE.is_match(sentence)
            || SECRET.is_match(sentence))
    {
        judged.sign(
            SignKind::Exfiltration,
            format!(
                "has a URL with a slot for data {}: whatever the model fills in leaves for that host",
                quoted(url)
            ),
        );
    }
    let destination = MAIL_ADDRESS
        .find(sentence)
        .or_else(|| OTHER_DESTINATION.find(sentence))
        .or_else(|| URL.find(sentence));
    if let Some(destination) = destination {
        let moved = flow.is_some() || REWRITE.is_match(sentence) || MOVED.is_match(sentence);
        let fixed_address = flow.is_some() && MAIL_ADDRESS.is_match(sentence);
        let what = DATA_OF_ANOTHER.is_match(sentence)
            || CONVERSATION.is_match(sentence)
            || USER_MESSAGE.is_match(sentence)
            || SECRET.is_match(sentence)
            || REWRITE.is_match(sentence);
        if (moved && what) || fixed_address {
            judged.sign(
                SignKind::Exfiltration,
                format!(
                    "asks the model to send data to {}: a tool's text must not route data elsewhere",
                    quoted(destination)
                ),
            );
        }
    }
    let other_tools = other_tools(sentence);
    let preference = PREFERENCE.find(sentence).or_else(|| {
        (role == TextRole::Identifier)
            .then(|| NAME_PREFERENCE.find(sentence))
            .flatten()
    });
    if let Some(preference) = preference {
        judged.sign(
            SignKind::Preference,
            format!(
                "steers the model to this tool ({}): let the model choose by what tools do",
                quoted(preference)
            ),
        );
    } else if let Some(avoided) = avoided_tool(sentence) {
        judged.sign(
            SignKind::Preference,
            format!(
                "keeps the model off the tool `{}`: a tool's text should speak only of itself",
                PeerLine(avoided)
            ),
        );
    } else if let Some(others) = other_tools
        && PREFERENCE_OVER_OTHERS.is_match(sentence)
    {
        judged.sign(
            SignKind::Preference,
            format!(
                "steers the model away from {}: a tool's text should speak only of itself",
                quoted(others)
            ),
        );
    } else if let Some(others) = other_tools
        && (flow.is_some() || REWRITE.is_match(sentence))
        && !RESTRICTIVE.is_match(sentence)
    {
        judged.sign(
            SignKind::CrossTool,
            format!(
                "tells the model how to use {}: a tool has no business changing other tools' calls",
                quoted(others)
            ),
        );
    }
    if let Some(hiding) = CONCEALMENT.find(sentence) {
        judged.sign(
            SignKind::Concealment,
            format!(
                "asks the model to hide what it does from the user ({})",
                quoted(hiding)
            ),
        );
    } else if let Some(unseen) = UNSEEN.find(sentence)
        && flow_any.is_some()
    {
        judged.sign(
            SignKind::Concealment,
            format!("asks the model to move data unseen ({})", quoted(unseen)),
        );
    }
    let consent = FAKE_CONSENT
        .find(sentence)
        .or_else(|| flow.and_then(|_| UNASKED.find(sentence)));
    if let Some(consent) = consent {
        judged.sign(
            SignKind::Concealment,
            format!(
                "claims the user's consent ({}): only the user gives it, in the client",
                quoted(consent)
            ),
        );
    }
    if let Some(order) = OVERRIDE.find(sentence) {
        judged.sign(
            SignKind::Order,
            format!("turns the model against its user ({})", quoted(order)),
        );
    }
    if let Some(code) = REMOTE_CODE.find(sentence) {
        judged.sign(
            SignKind::Order,
            format!(
                "pipes a download into a shell ({}): a tool's text must not ask to run code",
                quoted(code)
            ),
        );
    }
    if let Some(marker) = ADDRESSED.find(sentence)
        && marker.as_str().trim_start().starts_with('<')
    {
        judged.sign(
            SignKind::Order,
            format!(
                "has a block addressed to the model ({}): a tool's text describes, it does not order",
                quoted(marker)
            ),
        );
    }
}

/// The tool a sentence keeps the model off for good ("never use add", "do not call
/// `search` from the other server"), when it is not this one. A tool kept off for some
/// work ("do not use search_issues for conversations") is guidance, not steering.
fn avoided_tool(sentence: &str) -> Option<&str> {
    const NOT_A_TOOL: &[&str] = &[
        "this", "it", "these", "that", "the", "a", "an", "any", "me", "us", "for", "with", "when",
        "on", "in", "to", "if", "unless", "as", "more", "other",
    ];
    const FOR_GOOD: &[&str] = &[
        "",
        "from",
        "at all",
        "again",
        "anymore",
        "ever",
        "in this session",
    ];
    let found = AVOID_NAMED.captures(sentence)?;
    let name = found.get(1)?;
    let rest = sentence[name.end()..]
        .trim_start_matches('`')
        .trim()
        .to_lowercase();
    let for_good = FOR_GOOD.iter().any(|lead| {
        if lead.is_empty() {
            rest.is_empty()
        } else {
            rest.starts_with(lead)
        }
    });
    (for_good && !NOT_A_TOOL.contains(&name.as_str().to_lowercase().as_str()))
        .then(|| name.as_str())
}

/// Other tools named in `sentence` ("any other tool", "the shell tool available in this
/// session"), leaving out this tool's own calls ("for every tool call").
fn other_tools(sentence: &str) -> Option<regex::Match<'_>> {
    OTHER_TOOLS.find_iter(sentence).find(|found| {
        let after = sentence[found.end()..].trim_start().to_lowercase();
        !(found.as_str().to_lowercase().ends_with("tool") && after.starts_with("call"))
    })
}

/// An order to decode text and follow it: asked in one sentence, or across the text when
/// something in it was encoded (a decoded layer, percent-encoded or entity runs). "Decodes
/// base64" and "applies filters" in two sentences of a codec tool's text are not one.
pub(super) fn decode_order(text: &str, views: &[(Layer, String)], signs: &mut Vec<Sign>) {
    static ENCODED_RUN: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?:%[0-9A-Fa-f]{2}){3,}|(?:&#[xX]?[0-9A-Fa-f]{1,7};){3,}")
            .expect("a valid pattern")
    });
    let Some((_, shown)) = views.first() else {
        return;
    };
    let asked_at_once =
        sentences(shown).any(|sentence| DECODE.is_match(sentence) && FOLLOW.is_match(sentence));
    let encoded = ENCODED_RUN.is_match(text)
        || views
            .iter()
            .any(|(layer, _)| !matches!(layer, Layer::Shown | Layer::Reversed));
    let asked_across = encoded && DECODE.is_match(shown) && FOLLOW.is_match(shown);
    if asked_at_once || asked_across {
        Judged {
            signs,
            layer: Layer::Shown,
            sentence: shown,
        }
        .sign(
            SignKind::Order,
            "asks the model to decode text and follow it: a tool's text has no orders to hide"
                .into(),
        );
    }
}

/// Findings for the characters themselves: invisible and control characters, variation
/// selectors beyond an emoji's one, and words mixing scripts.
pub(super) fn hidden_characters(text: &str, signs: &mut Vec<Sign>) {
    let hidden: Vec<String> = text
        .chars()
        .filter(|c| is_hidden(*c))
        .take(5)
        .map(|c| format!("U+{:04X}", u32::from(c)))
        .collect();
    let selectors = text
        .chars()
        .filter(|c| matches!(u32::from(*c), 0xFE00..=0xFE0F | 0xE0100..=0xE01EF))
        .count();
    let supplementary = text
        .chars()
        .any(|c| matches!(u32::from(c), 0xE0100..=0xE01EF));
    let mut reasons = Vec::new();
    if !hidden.is_empty() {
        reasons.push(format!(
            "contains invisible or control characters ({})",
            hidden.join(", ")
        ));
    }
    if supplementary || selectors > 2 {
        reasons.push(format!(
            "contains {selectors} variation selectors: they can carry hidden bytes after a visible character"
        ));
    }
    let mixed = layers::mixed_script_words(text, 3);
    if !mixed.is_empty() {
        reasons.push(format!(
            "mixes letters of another script into Latin words ({}): they pass for Latin letters and slip past a reader",
            mixed.join("; ")
        ));
    }
    // The text as it is, escaped: where the characters stand.
    let shown = excerpt(text);
    for reason in reasons {
        signs.push(Sign {
            kind: SignKind::HiddenCharacters,
            excerpt: shown.clone(),
            layer: Layer::Shown,
            reason,
        });
    }
}

/// A hidden layer that says something is hidden text on its own.
pub(super) fn hidden_layer_signs(views: &[(Layer, String)], signs: &mut Vec<Sign>) {
    for (layer, text) in views.iter().skip(1) {
        if matches!(layer, Layer::Reversed) {
            continue;
        }
        let carries = signs.iter().any(|sign| sign.layer == *layer);
        if carries {
            signs.push(Sign {
                kind: SignKind::HiddenCharacters,
                excerpt: excerpt(text),
                layer: *layer,
                reason: "carries text a reader does not see, and it gives orders".into(),
            });
        }
    }
}

/// Invisible or control characters: zero-width, bidirectional controls, tag characters,
/// invisible operators, and controls other than line breaks and tabs.
pub(crate) fn is_hidden(c: char) -> bool {
    matches!(c,
        '\u{200B}'..='\u{200F}' | '\u{061C}' | '\u{180E}' | '\u{202A}'..='\u{202E}'
        | '\u{2060}'..='\u{2064}' | '\u{2066}'..='\u{206F}' | '\u{FEFF}'
        | '\u{E0000}'..='\u{E007F}')
        || (c.is_control() && c != '\n' && c != '\t' && c != '\r')
}
