//! `docs/check.md`'s catalog table is generated from the registry ([`CHECKS`]): this test
//! renders it and compares it with the file; `UPDATE_EXPECT=1` writes it in place.

use std::path::PathBuf;

use switchboard_check::catalog::{Applies, CHECKS, CheckDef, Eras};

/// The line before the generated table.
const START: &str = "<!-- The table below is generated from the registry (`catalog::CHECKS`) by \
                     crates/switchboard-check/tests/it/docs.rs; UPDATE_EXPECT=1 rewrites it. -->";
/// The line after it.
const END: &str = "<!-- End of the generated table. -->";

/// Where the check runs: its transports and eras.
fn applies(def: &CheckDef) -> &'static str {
    match (def.applies, def.eras) {
        (Applies::Any, Eras::Both) => "any",
        (Applies::Any, Eras::Legacy) => "legacy",
        (Applies::Any, Eras::Modern) => "2026-07-28",
        (Applies::Stdio, Eras::Both) => "stdio",
        (Applies::Stdio, Eras::Legacy) => "stdio, legacy",
        (Applies::Stdio, Eras::Modern) => "stdio, 2026-07-28",
        (Applies::Http, Eras::Both) => "HTTP",
        (Applies::Http, Eras::Legacy) => "HTTP, legacy",
        (Applies::Http, Eras::Modern) => "HTTP, 2026-07-28",
    }
}

/// The table, one row per check in report order.
fn table() -> String {
    let mut out = String::from(
        "| id | severity | applies to | spec | verifies |\n| --- | --- | --- | --- | --- |\n",
    );
    for def in CHECKS {
        let step = def
            .seed_step
            .map(|n| format!(" (step {n})"))
            .unwrap_or_default();
        out.push_str(&format!(
            "| `{}`{step} | {} | {} | {} | {} |\n",
            def.id,
            def.severity.as_str(),
            applies(def),
            def.spec,
            def.verifies.replace('|', "\\|"),
        ));
    }
    out
}

#[test]
fn the_docs_catalog_table_is_the_registry() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/check.md");
    let text = std::fs::read_to_string(&path).expect("docs/check.md");
    let (before, rest) = text.split_once(START).expect("the table's start marker");
    let (current, after) = rest.split_once(END).expect("the table's end marker");
    let wanted = format!("\n{}", table());
    if current == wanted {
        return;
    }
    if std::env::var_os("UPDATE_EXPECT").is_some() {
        std::fs::write(&path, format!("{before}{START}{wanted}{END}{after}")).expect("write");
        return;
    }
    panic!(
        "docs/check.md's catalog table differs from the registry; run with UPDATE_EXPECT=1 \
         to regenerate it. Wanted:\n{wanted}"
    );
}
