//! Ad-hoc servers, given on the command line instead of a config file: `--url URL` (an
//! HTTP server) or `-- CMD ARGS...` (a stdio server). The server is named [`ADHOC_NAME`]
//! and takes the place of the SERVER word: `call --url URL TOOL key=value`,
//! `call TOOL key=value -- node server.js`. No config file is read when one is given.

use std::collections::VecDeque;

use switchboard_config::{ServerEntry, TransportEntry};

use crate::Failure;
use crate::arguments::ArgumentSource;
use crate::config_cmd::PairFlag;
use crate::connect::{LoadedConfig, one_server_config};

/// The name of the ad-hoc server, in output and where a SERVER word would be.
pub(crate) const ADHOC_NAME: &str = "adhoc";

/// Where the configuration of an ad-hoc server is said to come from.
const SOURCE: &str = "<ad-hoc server>";

/// The flags that give an ad-hoc server: `--url` with its `--header`s, or a command after
/// `--` with its `-e`/`--env`s.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct AdHocFlags<'a> {
    pub(crate) url: Option<&'a str>,
    pub(crate) command: &'a [String],
    pub(crate) env: &'a [String],
    pub(crate) headers: &'a [String],
}

/// An ad-hoc server, checked.
pub(crate) struct AdHoc {
    transport: TransportEntry,
}

impl AdHoc {
    /// The server `--url` or the words after `--` give, if any; a URL that is not http(s)
    /// is a usage error. (clap keeps both from being given at once.)
    pub(crate) fn from_flags(flags: &AdHocFlags<'_>) -> Result<Option<AdHoc>, Failure> {
        let pairs = |texts: &[String], flag: PairFlag| -> Result<Vec<(String, String)>, Failure> {
            texts
                .iter()
                .map(|text| flag.split(text).map_err(Failure::Usage))
                .collect()
        };
        if !flags.headers.is_empty() && flags.url.is_none() {
            return Err(Failure::Usage(
                "`--header` is sent to an ad-hoc HTTP server (`--url URL`); a server after `--` \
                 takes `-e KEY=VALUE`, and a configured one its entry's `headers`"
                    .into(),
            ));
        }
        if !flags.env.is_empty() && (flags.url.is_some() || flags.command.is_empty()) {
            return Err(Failure::Usage(
                "`-e`/`--env` sets the environment of an ad-hoc server after `--`; `--url URL` \
                 takes `--header 'Name: value'`, and a configured server its entry's `env`"
                    .into(),
            ));
        }
        let transport = match (flags.url, flags.command) {
            (Some(url), _) => TransportEntry::Http {
                url: checked_url(url)?,
                headers: pairs(flags.headers, PairFlag::Header)?,
            },
            (None, [program, args @ ..]) => TransportEntry::Stdio {
                command: program.clone(),
                args: args.to_vec(),
                env: pairs(flags.env, PairFlag::Env)?,
                cwd: None,
            },
            (None, []) => return Ok(None),
        };
        Ok(Some(AdHoc { transport }))
    }

    /// The ad-hoc server's name when one is given (before it is checked), for [`Words`].
    pub(crate) fn given(url: Option<&str>, command: &[String]) -> Option<&'static str> {
        (url.is_some() || !command.is_empty()).then_some(ADHOC_NAME)
    }

    /// A configuration of this one server; its URL's credentials and query values are
    /// hidden on stderr from now on, as a config file's secrets are.
    pub(crate) fn config(self) -> LoadedConfig {
        let file = one_server_config(ADHOC_NAME, self.transport, SOURCE);
        crate::terminal::hide_secrets(
            file.entries()
                .flat_map(ServerEntry::secret_values)
                .collect(),
        );
        LoadedConfig { file }
    }
}

/// Whether `entry` is the ad-hoc server (a config entry may be named `adhoc` too).
fn is_adhoc(entry: &ServerEntry) -> bool {
    entry.origin.file == SOURCE
}

/// The command that logs in to `entry`'s server: `switchboard login NAME`, or for the
/// ad-hoc HTTP server, which no config names, `switchboard login --url URL` (the tokens
/// are saved for the URL, so a later `--url URL` uses them). The URL is shown as it is
/// displayed everywhere, credentials and query values hidden.
pub(crate) fn login_command(entry: &ServerEntry) -> String {
    match &entry.transport {
        TransportEntry::Http { url, .. } if is_adhoc(entry) => format!(
            "switchboard login --url {}",
            switchboard_text::redact::url_for_display(url)
        ),
        _ => format!("switchboard login {}", entry.name),
    }
}

/// `url` when it is an absolute http:// or https:// URL with a host.
fn checked_url(url: &str) -> Result<String, Failure> {
    let parsed = url::Url::parse(url);
    let usable = parsed
        .as_ref()
        .is_ok_and(|u| matches!(u.scheme(), "http" | "https") && u.host_str().is_some());
    if usable {
        return Ok(url.to_owned());
    }
    Err(Failure::Usage(format!(
        "--url {} is not an http:// or https:// URL; write it with its scheme, e.g. \
         --url http://localhost:8080/mcp",
        switchboard_text::redact::url_for_display(url)
    )))
}

/// A verb's positional words in order, SERVER first: with an ad-hoc server, its name
/// stands first and every word the user gave moves one place on (clap read the first of
/// them as SERVER).
pub(crate) struct Words {
    words: VecDeque<String>,
    adhoc: bool,
}

impl Words {
    pub(crate) fn new(adhoc: Option<&str>, given: impl IntoIterator<Item = String>) -> Words {
        Words {
            words: adhoc.map(str::to_owned).into_iter().chain(given).collect(),
            adhoc: adhoc.is_some(),
        }
    }

    /// `call`'s words after SERVER and TOOL read as its arguments. With an ad-hoc server, a
    /// first word that is no argument is most likely a tool named after a SERVER word that
    /// is not wanted there: the error says so.
    pub(crate) fn call_arguments(self, tool: &str) -> Result<ArgumentSource, Failure> {
        let adhoc = self.adhoc;
        let rest = self.rest();
        ArgumentSource::from_words(&rest).map_err(|problem| match rest.first() {
            Some(first) if adhoc && !first.contains('=') => Failure::Usage(format!(
                "`{first}` is not an argument: with an ad-hoc server (a command after --, or \
                 --url) SERVER is left out, so `{tool}` was taken as the tool; write `call \
                 {first} key=value… -- CMD…` (or `call --url URL {first} key=value…`)"
            )),
            _ => Failure::Usage(problem),
        })
    }

    /// The next word, if there is one.
    pub(crate) fn optional(&mut self) -> Option<String> {
        self.words.pop_front()
    }

    /// The next word, which the verb needs (`what` names it in the usage error).
    pub(crate) fn required(&mut self, what: &str) -> Result<String, Failure> {
        self.words.pop_front().ok_or_else(|| {
            Failure::Usage(format!(
                "give the {what}: with an ad-hoc server, leave SERVER out and give the \
                     other words in their order (see --help)"
            ))
        })
    }

    /// The words left.
    pub(crate) fn rest(self) -> Vec<String> {
        self.words.into()
    }

    /// A usage error when words are left: with an ad-hoc server there is no SERVER word.
    pub(crate) fn no_more(self) -> Result<(), Failure> {
        match self.words.front() {
            None => Ok(()),
            Some(extra) => Err(Failure::Usage(format!(
                "unexpected `{extra}`: with an ad-hoc server (--url, or a command after --) \
                 leave SERVER out; the server is named `{ADHOC_NAME}`"
            ))),
        }
    }
}
