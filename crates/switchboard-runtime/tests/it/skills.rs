//! Skills for a host (SEP-2640): the catalog of the servers that declare the extension,
//! read without touching a skill file; loading verifies; a skill's files are read from
//! the server it came from, and only the ones it lists.

use switchboard_runtime::{Runtime, SkillLoadError};
use switchboard_session::SkillError;

use crate::support::*;

/// The `resources/read`s the fixture logged, in order.
fn reads(runtime: &Runtime, server: &str) -> Vec<String> {
    runtime
        .server(server)
        .stderr_tail()
        .unwrap_or_default()
        .lines()
        .filter_map(|line| line.strip_prefix("fixture: read "))
        .map(str::to_owned)
        .collect()
}

#[tokio::test]
async fn a_host_lists_skills_without_reading_and_loads_only_verified_ones() {
    let mark = marker("skills");
    let runtime = Runtime::new(options(vec![
        fixture_entry("alpha", &mark, &["--mode", "skills"]),
        fixture_entry("plain", &mark, &[]),
    ]));
    enabled(&runtime).await;
    let catalog = within("skills", TEST_DEADLINE, runtime.skills()).await;
    let listed: Vec<String> = catalog
        .entries()
        .map(|(server, entry)| format!("{server} {}", entry.uri))
        .collect();
    expect_test::expect![[r#"
        alpha skill://forms/SKILL.md
        alpha skill://tampered/SKILL.md"#]]
    .assert_eq(&listed.join("\n"));
    assert!(catalog.failures.is_empty(), "{:?}", catalog.failures);
    assert!(reads(&runtime, "alpha").is_empty(), "listing read a file");

    let skill = within(
        "load",
        TEST_DEADLINE,
        runtime.server("alpha").load_skill("skill://forms/SKILL.md"),
    )
    .await
    .expect("forms loads");
    assert_eq!(skill.name(), Some("forms"));
    assert_eq!(skill.body(), "\nRead references/FORMS.md first.\n");
    let forms = runtime
        .read_skill_file(&skill, "skill://forms/references/FORMS.md")
        .await
        .expect("a listed file");
    assert_eq!(forms.text(), Some("Supporting content.\n"));
    let tampered = runtime
        .server("alpha")
        .load_skill("skill://tampered/SKILL.md")
        .await
        .map(|_| ());
    assert!(
        matches!(
            tampered,
            Err(SkillLoadError::Skill(SkillError::DigestMismatch { .. }))
        ),
        "{tampered:?}"
    );
    let refusals = [
        runtime
            .read_skill_file(&skill, "fixture://readme")
            .await
            .map(|_| ()),
        runtime
            .server("plain")
            .load_skill("skill://forms/SKILL.md")
            .await
            .map(|_| ()),
        runtime
            .server("omega")
            .load_skill("skill://forms/SKILL.md")
            .await
            .map(|_| ()),
    ];
    let refusals: Vec<String> = refusals
        .iter()
        .map(|refusal| match refusal {
            Ok(()) => "used".to_owned(),
            Err(error) => error.to_string(),
        })
        .collect();
    expect_test::expect![[r#"
        skill `skill://forms/SKILL.md` does not list `fixture://readme` among its files
        MCP server `plain` does not offer skills
        MCP server `omega` is not configured"#]]
    .assert_eq(&refusals.join("\n"));
    expect_test::expect![[r#"
        [
            "skill://forms/SKILL.md",
            "skill://forms/references/FORMS.md",
            "skill://tampered/SKILL.md",
        ]
    "#]]
    .assert_debug_eq(&reads(&runtime, "alpha"));
    runtime.dispose().await;
    no_processes_with(&mark).await;
}
