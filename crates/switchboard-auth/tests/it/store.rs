//! The token file under attack: stale or planted files at the temporary path, symlinks,
//! permissions others can use, another owner, and concurrent writers.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use switchboard_auth::{SavedAuthorization, StoreError, StoreKey, TokenStore};
use switchboard_testkit::locate::workspace_root;

/// A fresh directory, private to this user (0700), for one test.
fn private_dir(test: &str) -> PathBuf {
    let dir = workspace_root()
        .join("target/auth-tests")
        .join(format!("{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("mkdir");
    chmod(&dir, 0o700);
    dir
}

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path)
        .expect("stat")
        .permissions()
        .mode()
        & 0o777
}

fn authorization(server: &str) -> SavedAuthorization {
    SavedAuthorization {
        server_url: server.to_owned(),
        issuer: "https://as.test".into(),
        client_id: "c".into(),
        access_token: format!("token-for-{server}"),
        ..Default::default()
    }
}

#[test]
fn a_stale_world_readable_temp_file_does_not_make_the_token_file_readable() {
    let dir = private_dir("stale-temp");
    let stale = dir.join("tokens.tmp");
    std::fs::write(&stale, "stale").expect("write");
    chmod(&stale, 0o644);
    let store = TokenStore::new(&dir.join("tokens.json"));
    store
        .save(&authorization("https://a.test/mcp"))
        .expect("save");
    assert_eq!(mode(&dir.join("tokens.json")), 0o600);
}

#[test]
fn a_symlink_at_the_temp_path_is_not_followed() {
    let dir = private_dir("temp-symlink");
    let victim = dir.join("victim.txt");
    std::fs::write(&victim, "victim").expect("write");
    std::os::unix::fs::symlink(&victim, dir.join("tokens.tmp")).expect("symlink");
    let store = TokenStore::new(&dir.join("tokens.json"));
    store
        .save(&authorization("https://a.test/mcp"))
        .expect("save");
    assert_eq!(std::fs::read_to_string(&victim).expect("read"), "victim");
    let written = std::fs::symlink_metadata(dir.join("tokens.json")).expect("stat");
    assert!(written.file_type().is_file());
    assert_eq!(mode(&dir.join("tokens.json")), 0o600);
}

#[test]
fn a_symlink_at_the_token_path_is_refused() {
    let dir = private_dir("token-symlink");
    let victim = dir.join("victim.json");
    std::fs::write(&victim, "victim").expect("write");
    let path = dir.join("tokens.json");
    std::os::unix::fs::symlink(&victim, &path).expect("symlink");
    let store = TokenStore::new(&path);
    let refused = store
        .save(&authorization("https://a.test/mcp"))
        .expect_err("a save through a link");
    assert!(refused.is_not_private(), "{refused:?}");
    assert!(
        matches!(refused, StoreError::NotPlain { .. }),
        "{refused:?}"
    );
    let refused = store
        .load("https://a.test/mcp")
        .expect_err("a load through a link");
    assert!(refused.to_string().contains("remove it"), "{refused}");
    assert_eq!(std::fs::read_to_string(&victim).expect("read"), "victim");
    assert!(std::fs::symlink_metadata(&path).expect("stat").is_symlink());
}

#[test]
fn a_token_file_others_can_read_is_refused() {
    for file_mode in [0o644, 0o640, 0o604, 0o660] {
        let dir = private_dir(&format!("readable-file-{file_mode:o}"));
        let path = dir.join("tokens.json");
        TokenStore::new(&path)
            .save(&authorization("https://a.test/mcp"))
            .expect("first save");
        chmod(&path, file_mode);
        let store = TokenStore::new(&path);
        let refused = store
            .save(&authorization("https://b.test/mcp"))
            .expect_err("a save to an open file");
        assert!(refused.is_not_private(), "{file_mode:o}: {refused:?}");
        let refused = store
            .load("https://a.test/mcp")
            .expect_err("a load from an open file");
        assert!(
            refused
                .to_string()
                .contains(&format!("chmod 600 {}", path.display())),
            "{refused}"
        );
        assert_eq!(mode(&path), file_mode, "left as it was");
    }
}

#[test]
fn a_token_directory_others_can_read_or_write_is_refused() {
    for dir_mode in [0o755, 0o750, 0o777, 0o1777, 0o770] {
        let dir = private_dir(&format!("open-dir-{dir_mode:o}"));
        let path = dir.join("tokens.json");
        TokenStore::new(&path)
            .save(&authorization("https://a.test/mcp"))
            .expect("first save");
        chmod(&dir, dir_mode);
        let store = TokenStore::new(&path);
        let refused = store
            .save(&authorization("https://b.test/mcp"))
            .expect_err("a save into an open directory");
        assert!(refused.is_not_private(), "{dir_mode:o}: {refused:?}");
        let refused = store
            .load("https://a.test/mcp")
            .expect_err("a load from an open directory");
        assert!(
            refused
                .to_string()
                .contains(&format!("chmod 700 {}", dir.display())),
            "{refused}"
        );
    }
}

#[test]
fn concurrent_saves_from_threads_lose_nothing() {
    let dir = private_dir("threads");
    let path = dir.join("tokens.json");
    let threads: Vec<_> = (0..8)
        .map(|thread| {
            let path = path.clone();
            std::thread::spawn(move || {
                for n in 0..10 {
                    TokenStore::new(&path)
                        .save(&authorization(&format!("https://{thread}-{n}.test/mcp")))
                        .expect("save");
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().expect("thread");
    }
    assert_eq!(saved_servers(&path), 80);
    assert_eq!(mode(&path), 0o600);
}

fn saved_servers(path: &Path) -> usize {
    let text = std::fs::read_to_string(path).expect("read");
    let saved: serde_json::Value = serde_json::from_str(&text).expect("json");
    saved["servers"].as_array().map_or(0, Vec::len)
}

/// Set in the environment of the child processes of the next test: `PATH|PREFIX`.
const CHILD: &str = "SWITCHBOARD_STORE_TEST_CHILD";

/// Several processes (this test binary, run again with only [`child_saves_ten`] selected)
/// save to one file at once.
#[test]
fn concurrent_saves_from_processes_lose_nothing() {
    let dir = private_dir("processes");
    let path = dir.join("tokens.json");
    let children: Vec<_> = (0..4)
        .map(|child| {
            std::process::Command::new(std::env::current_exe().expect("test binary"))
                .args(["store::child_saves_ten", "--exact", "--test-threads=1"])
                .env(CHILD, format!("{}|{child}", path.display()))
                .stdout(std::process::Stdio::null())
                .spawn()
                .expect("spawn a child")
        })
        .collect();
    for mut child in children {
        let status = switchboard_testkit::wait::exited(
            "a child to finish",
            std::time::Duration::from_secs(60),
            &mut child,
        );
        assert!(status.success(), "a child failed: {status}");
    }
    assert_eq!(saved_servers(&path), 40);
}

/// The work of one child of [`concurrent_saves_from_processes_lose_nothing`]; nothing
/// when run as an ordinary test.
#[test]
fn child_saves_ten() {
    let Ok(job) = std::env::var(CHILD) else {
        return;
    };
    let (path, prefix) = job.split_once('|').expect("PATH|PREFIX");
    for n in 0..10 {
        TokenStore::new(Path::new(path))
            .save(&authorization(&format!("https://p{prefix}-{n}.test/mcp")))
            .expect("save");
    }
}

/// A file or directory another user owns is refused, even when its mode is private. (Run
/// as root, the test hands them to `nobody`; as anyone else, to root.)
#[test]
fn a_token_file_or_directory_another_user_owns_is_refused() {
    let me = nix::unistd::geteuid();
    let other = if me.is_root() { 65534 } else { 0 };
    let dir = private_dir("foreign");
    let path = dir.join("tokens.json");
    TokenStore::new(&path)
        .save(&authorization("https://a.test/mcp"))
        .expect("first save");
    if std::os::unix::fs::lchown(&path, Some(other), None).is_ok() {
        let refused = TokenStore::new(&path)
            .load("https://a.test/mcp")
            .expect_err("a foreign file");
        assert!(
            matches!(refused, StoreError::ForeignOwner { owner, .. } if owner == other),
            "{refused:?}"
        );
        std::os::unix::fs::lchown(&path, Some(me.as_raw()), None).expect("chown back");
    } else {
        // Without the right to give files away, a file owned by root stands in.
        let refused = TokenStore::new(Path::new("/etc/hostname"))
            .load("https://a.test/mcp")
            .expect_err("a file root owns");
        assert!(refused.is_not_private(), "{refused:?}");
    }
    if std::os::unix::fs::lchown(&dir, Some(other), None).is_ok() {
        let refused = TokenStore::new(&path)
            .save(&authorization("https://b.test/mcp"))
            .expect_err("a foreign directory");
        assert!(
            matches!(refused, StoreError::ForeignOwner { owner, .. } if owner == other),
            "{refused:?}"
        );
        std::os::unix::fs::lchown(&dir, Some(me.as_raw()), None).expect("chown back");
    }
}

#[test]
fn each_identity_has_its_own_authorization_apart_from_the_users_own() {
    let dir = private_dir("on-behalf-of");
    let store = TokenStore::new(&dir.join("tokens.json"));
    let server = "https://a.test/mcp";
    let as_identity = |identity: &str| SavedAuthorization {
        access_token: format!("token-of-{identity}"),
        on_behalf_of: Some(identity.to_owned()),
        ..authorization(server)
    };
    store.save(&authorization(server)).expect("save own");
    store
        .save(&as_identity("client:alice"))
        .expect("save alice");
    store.save(&as_identity("client:bob")).expect("save bob");
    let key = |identity: Option<&str>| StoreKey {
        server_url: server.to_owned(),
        on_behalf_of: identity.map(str::to_owned),
    };
    let token = |identity: Option<&str>| {
        store
            .load_for(&key(identity))
            .expect("load")
            .map(|saved| saved.access_token)
    };
    assert_eq!(token(None).as_deref(), Some("token-for-https://a.test/mcp"));
    assert_eq!(
        token(Some("client:alice")).as_deref(),
        Some("token-of-client:alice")
    );
    assert_eq!(token(Some("client:carol")), None);
    // A logout as one identity leaves the others and the user's own.
    assert!(
        store
            .remove_for(&key(Some("client:alice")))
            .expect("remove")
    );
    assert_eq!(token(Some("client:alice")), None);
    assert_eq!(
        token(Some("client:bob")).as_deref(),
        Some("token-of-client:bob")
    );
    assert!(store.remove(server).expect("remove own"));
    assert_eq!(
        token(Some("client:bob")).as_deref(),
        Some("token-of-client:bob")
    );
}
