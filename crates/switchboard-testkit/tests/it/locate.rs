//! `locate`: the workspace root and the nested build of the fixture binary.

use switchboard_testkit::locate::{fixture_bin, workspace_root};

#[test]
fn finds_the_workspace_and_builds_the_fixture() {
    let root = workspace_root();
    assert!(root.join("Cargo.toml").is_file(), "{}", root.display());
    assert!(root.join("crates/switchboard-testkit").is_dir());
    let path = fixture_bin();
    assert!(path.is_file(), "{}", path.display());
    assert_eq!(fixture_bin(), path, "built once, same path");
}
