//! The skills extension end to end over an in-memory server that serves a scripted
//! `skills/list` and `resources/read`, and records every read: nothing is read before a
//! load, and nothing that fails verification is returned.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use expect_test::expect;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use switchboard_session::{
    ConnectionParts, EraChoice, LoadedSkill, Session, SkillContent, SkillError,
};
use switchboard_testkit::wait::within;
use switchboard_wire::memory::memory_pair;
use switchboard_wire::{ConnectionOptions, Inbound};

use crate::support::{TEST_DEADLINE, quick_config};

const SKILL_MD: &str =
    "---\nname: forms\ndescription: Fill forms\n---\n\nUse references/FORMS.md.\n";
const FORMS: &str = "Supporting content.\n";

fn digest(text: &str) -> String {
    let bytes: [u8; 32] = Sha256::digest(text.as_bytes()).into();
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

fn file(uri: &str, listed_as: &str) -> Value {
    json!({ "uri": uri, "digest": digest(listed_as), "size": listed_as.len() })
}

/// The skill `forms` as listed: its SKILL.md and FORMS.md with their true digests, and
/// two more files whose served bytes differ from what is listed.
fn forms_entry() -> Value {
    json!({
        "uri": "skill://forms/SKILL.md",
        "frontmatter": { "name": "forms", "description": "Fill forms" },
        "resources": [
            file("skill://forms/SKILL.md", SKILL_MD),
            file("skill://forms/references/FORMS.md", FORMS),
            file("skill://forms/longer.md", "short\n"),
            file("skill://forms/tampered.md", "original\n"),
        ]
    })
}

/// What the server serves for each URI.
fn served() -> HashMap<String, String> {
    [
        ("skill://forms/SKILL.md", SKILL_MD),
        ("skill://forms/references/FORMS.md", FORMS),
        (
            "skill://forms/longer.md",
            "short\nand more than the entry said\n",
        ),
        ("skill://forms/tampered.md", "replaced\n"),
        ("skill://forms/unlisted.md", "never listed\n"),
        ("skill://big/SKILL.md", "---\nname: big\n---\n"),
        ("skill://gen/SKILL.md", "---\nname: gen\n---\n"),
    ]
    .into_iter()
    .map(|(uri, text)| (uri.to_owned(), text.to_owned()))
    .collect()
}

struct Server {
    session: Session,
    reads: Arc<Mutex<Vec<String>>>,
}

/// A 2026-07-28 server declaring resources and the skills extension, listing `skills`.
async fn serve(skills: Vec<Value>) -> Server {
    let ((client, client_inbound), (server, mut server_inbound)) = memory_pair(
        ConnectionOptions::new("skills"),
        ConnectionOptions::new("client"),
    );
    let reads = Arc::new(Mutex::new(Vec::new()));
    let recorded = reads.clone();
    let files = served();
    tokio::spawn(async move {
        while let Some(inbound) = server_inbound.recv().await {
            let Inbound::Request(request) = inbound else {
                continue;
            };
            let uri = request
                .params
                .as_ref()
                .and_then(|p| p.get("uri"))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            let result = match request.method.as_str() {
                "server/discover" => json!({
                    "supportedVersions": ["2026-07-28"],
                    "capabilities": {
                        "resources": {},
                        "extensions": { "io.modelcontextprotocol/skills": {} }
                    },
                    "serverInfo": { "name": "skills", "version": "1" }
                }),
                "skills/list" => json!({ "skills": skills }),
                "resources/read" => {
                    recorded.lock().expect("reads").push(uri.clone());
                    let text = files.get(&uri).cloned().unwrap_or_default();
                    json!({ "contents": [{ "uri": uri, "mimeType": "text/markdown", "text": text }] })
                }
                _ => json!({}),
            };
            if server.respond(&request.id, Ok(&result)).await.is_err() {
                return;
            }
        }
    });
    let mut config = quick_config("skills");
    config.era = EraChoice::Modern;
    let parts = ConnectionParts {
        connection: client,
        inbound: client_inbound,
        process: None,
    };
    let session = within("connect", TEST_DEADLINE, Session::connect(parts, config))
        .await
        .expect("connects");
    Server { session, reads }
}

impl Server {
    fn reads(&self) -> Vec<String> {
        std::mem::take(&mut *self.reads.lock().expect("reads"))
    }

    async fn load(
        &self,
        skills: &[switchboard_protocol::SkillEntry],
        uri: &str,
    ) -> Result<LoadedSkill, SkillError> {
        let entry = skills.iter().find(|s| s.uri == uri).expect("listed");
        within("load", TEST_DEADLINE, self.session.load_skill(entry)).await
    }

    async fn read(&self, skill: &LoadedSkill, uri: &str) -> Result<SkillContent, SkillError> {
        within(
            "read",
            TEST_DEADLINE,
            self.session.read_skill_file(skill, uri),
        )
        .await
    }
}

fn outcome<T>(result: Result<T, SkillError>, show: impl Fn(T) -> String) -> String {
    match result {
        Ok(value) => show(value),
        Err(error) => format!("refused: {error}"),
    }
}

#[tokio::test]
async fn listing_reads_nothing_and_a_bad_entry_is_a_problem() {
    let mut bad = forms_entry();
    bad["uri"] = json!("skill://bad/SKILL.md");
    bad["resources"][0]["digest"] = json!("sha256:XYZ");
    let server = serve(vec![forms_entry(), bad]).await;
    assert!(server.session.offers_skills());
    let listing = within("list", TEST_DEADLINE, server.session.list_skills())
        .await
        .expect("listing");
    let items: Vec<&str> = listing.items.iter().map(|s| s.uri.as_str()).collect();
    let problems: Vec<&str> = listing.problems.iter().map(|p| p.detail.as_str()).collect();
    expect![[r#"["skill://forms/SKILL.md"] ["skill `skill://bad/SKILL.md`: file `skill://forms/SKILL.md` is not inside the skill's directory"]"#]]
        .assert_eq(&format!("{items:?} {problems:?}"));
    assert!(server.reads().is_empty(), "listing read a skill file");
}

#[tokio::test]
async fn a_loaded_skill_reads_only_listed_files_and_only_verified_content() {
    let server = serve(vec![forms_entry()]).await;
    let listing = server.session.list_skills().await.expect("listing");
    let skill = server
        .load(&listing.items, "skill://forms/SKILL.md")
        .await
        .expect("loads");
    expect![[r#""\nUse references/FORMS.md.\n""#]].assert_eq(&format!("{:?}", skill.body()));
    let text = |content: SkillContent| format!("{:?}", content.text().unwrap_or_default());
    let reads = [
        "skill://forms/references/FORMS.md",
        "skill://forms/longer.md",
        "skill://forms/tampered.md",
        "skill://forms/unlisted.md",
    ];
    let mut shown = Vec::new();
    for uri in reads {
        shown.push(format!(
            "{uri}: {}",
            outcome(server.read(&skill, uri).await, text)
        ));
    }
    expect![[r#"
        skill://forms/references/FORMS.md: "Supporting content.\n"
        skill://forms/longer.md: refused: `skill://forms/longer.md`: 35 bytes were read where its entry says 6; not used
        skill://forms/tampered.md: refused: `skill://forms/tampered.md`: the content has digest sha256:e2208f01e42b2cab0fef975b55dc70d39579dd3d0c5d0758c499baa5109ef187 where its entry says sha256:25718360e05d3c2d0963d1381e9dd4dae5fca789244ee4b9f861adcc0cc96218; not used
        skill://forms/unlisted.md: refused: skill `skill://forms/SKILL.md` does not list `skill://forms/unlisted.md` among its files"#]]
    .assert_eq(&shown.join("\n"));
    // The unlisted file was never asked for.
    expect![[r#"["skill://forms/SKILL.md", "skill://forms/references/FORMS.md", "skill://forms/longer.md", "skill://forms/tampered.md"]"#]]
        .assert_eq(&format!("{:?}", server.reads()));
}

#[tokio::test]
async fn oversized_and_dynamic_skills_are_refused_before_any_read() {
    let big = json!({
        "uri": "skill://big/SKILL.md",
        "frontmatter": { "name": "big" },
        "resources": [
            file("skill://big/SKILL.md", "---\nname: big\n---\n"),
            { "uri": "skill://big/huge.bin", "digest": digest(""), "size": 10_u64 * 1024 * 1024 * 1024 }
        ]
    });
    let generated = json!({
        "uri": "skill://gen/SKILL.md",
        "frontmatter": { "name": "gen" },
        "resources": "dynamic"
    });
    let server = serve(vec![big, generated]).await;
    let listing = server.session.list_skills().await.expect("listing");
    let mut shown = Vec::new();
    for uri in ["skill://big/SKILL.md", "skill://gen/SKILL.md"] {
        let result = server.load(&listing.items, uri).await;
        shown.push(outcome(result, |skill| {
            format!("loaded {:?}", skill.integrity)
        }));
    }
    expect![[r#"
        refused: skill `skill://big/SKILL.md` has 10737418258 bytes of files, over the cap of 16777216 for one skill
        refused: skill `skill://gen/SKILL.md` is generated (`resources: "dynamic"`): nothing to verify it against, not loaded"#]]
    .assert_eq(&shown.join("\n"));
    assert!(server.reads().is_empty(), "a refused skill was read");
}
