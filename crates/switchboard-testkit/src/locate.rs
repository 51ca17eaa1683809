//! Finds the `switchboard-fixture` binary (and the server crate's conformance example) for tests
//! in other crates.
//!
//! Cargo only provides `CARGO_BIN_EXE_<name>` to the tests of the crate that owns the
//! binary, so other crates call [`fixture_bin`], which builds it once per process with
//! `cargo build --workspace --bin switchboard-fixture` and returns its path. The build
//! selects the whole workspace so that dependencies get the same features as in
//! `cargo build --workspace --bins` (what `scripts/test.sh` runs first): the fixture is then
//! already fresh, instead of rebuilt with a narrower feature set (which would also rebuild
//! the TLS stack and replace the binary other tests are running).
//! Panicking is the intended way to fail here: this is test support.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// How long the build of the fixture binary may take before [`fixture_bin`] gives up.
pub const FIXTURE_BUILD_DEADLINE: Duration = Duration::from_secs(600);

/// Set this environment variable to a fixture binary to skip the build.
pub const FIXTURE_BIN_ENV: &str = "SWITCHBOARD_FIXTURE_BIN";

const FIXTURE_BIN_NAME: &str = "switchboard-fixture";

/// The workspace root (the directory with the root `Cargo.toml`), derived from this
/// crate's location at compile time.
pub fn workspace_root() -> PathBuf {
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    // crates/switchboard-testkit -> crates -> workspace root
    match manifest_dir.ancestors().nth(2) {
        Some(root) => root.to_path_buf(),
        None => manifest_dir.to_path_buf(),
    }
}

/// The path of the `switchboard-fixture` binary, built on first use (once per process).
///
/// Uses `$SWITCHBOARD_FIXTURE_BIN` if set. Otherwise runs `$CARGO build --workspace --bin
/// switchboard-fixture` (or `cargo` if `CARGO` is unset) in the
/// workspace root and returns `<target>/debug/switchboard-fixture`, where `<target>` is
/// `$CARGO_TARGET_DIR` or `<root>/target`.
///
/// # Panics
///
/// If the build fails, takes longer than [`FIXTURE_BUILD_DEADLINE`], or does not produce
/// the binary.
pub fn fixture_bin() -> PathBuf {
    static FIXTURE_BIN: OnceLock<PathBuf> = OnceLock::new();
    FIXTURE_BIN.get_or_init(build_fixture_bin).clone()
}

fn build_fixture_bin() -> PathBuf {
    if let Some(path) = std::env::var_os(FIXTURE_BIN_ENV) {
        let path = PathBuf::from(path);
        assert!(
            path.is_file(),
            "{FIXTURE_BIN_ENV} is set to {}, which is not a file",
            path.display()
        );
        return path;
    }
    cargo_build(&["--bin", FIXTURE_BIN_NAME], Path::new(FIXTURE_BIN_NAME))
}

/// The server crate's `conformance_server` example (the conformance suite's server
/// fixture), built on first use (once per process) with `cargo build --workspace --example
/// conformance_server`.
///
/// # Panics
///
/// As [`fixture_bin`].
pub fn conformance_server_bin() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        cargo_build(
            &["--example", "conformance_server"],
            &Path::new("examples").join("conformance_server"),
        )
    })
    .clone()
}

/// Runs `$CARGO build --workspace SELECTION` in the workspace root (bounded by
/// [`FIXTURE_BUILD_DEADLINE`]) and returns `<target>/debug/<built>`.
fn cargo_build(selection: &[&str], built: &Path) -> PathBuf {
    let root = workspace_root();
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(&cargo);
    command
        .current_dir(&root)
        .args(["build", "--workspace"])
        .args(selection)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let described = format!(
        "`{} build --workspace {}` in {}",
        Path::new(&cargo).display(),
        selection.join(" "),
        root.display()
    );
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(error) => panic!("could not start {described}: {error}"),
    };
    let stderr_reader = child.stderr.take().map(|mut stderr| {
        std::thread::spawn(move || {
            let mut text = Vec::new();
            let _ = stderr.read_to_end(&mut text);
            String::from_utf8_lossy(&text).into_owned()
        })
    });
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() > FIXTURE_BUILD_DEADLINE => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("{described} did not finish within {FIXTURE_BUILD_DEADLINE:?}");
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(50)),
            Err(error) => panic!("could not wait for {described}: {error}"),
        }
    };
    let build_output = stderr_reader
        .and_then(|reader| reader.join().ok())
        .unwrap_or_default();
    assert!(
        status.success(),
        "{described} failed ({status}):\n{build_output}"
    );
    let path = target_dir(&root).join("debug").join(built);
    assert!(
        path.is_file(),
        "{described} succeeded but {} does not exist",
        path.display()
    );
    path
}

fn target_dir(root: &Path) -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) if !dir.is_empty() => root.join(dir),
        _ => root.join("target"),
    }
}

/// A file of the pinned interop peers (`target/peers/…`, relative to the workspace root);
/// panics with the fix when it is missing.
pub fn peer_path(relative: &str) -> PathBuf {
    let path = workspace_root().join(relative);
    assert!(
        path.exists(),
        "{} is missing: run scripts/peers.sh (scripts/test.sh does)",
        path.display()
    );
    path
}

/// The rmcp peer binary, next to the fixture (built by `cargo build --workspace --bins`);
/// panics with the fix when it is missing.
pub fn rmcp_peer_bin() -> PathBuf {
    sibling_of_fixture("switchboard-rmcp-peer")
}

/// A binary of the workspace beside the fixture's.
fn sibling_of_fixture(name: &str) -> PathBuf {
    let dir = fixture_bin()
        .parent()
        .map(PathBuf::from)
        .unwrap_or_default();
    let path = dir.join(name);
    assert!(
        path.exists(),
        "{} is missing: run `cargo build --workspace --bins` (scripts/test.sh does)",
        path.display()
    );
    path
}

/// The `switchboard-peak` launcher, next to the fixture (built by `cargo build --workspace
/// --bins`); panics with the fix when it is missing.
pub fn peak_bin() -> PathBuf {
    sibling_of_fixture("switchboard-peak")
}
