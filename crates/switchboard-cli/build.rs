//! Build script: names the commit the binary is built from, for `switchboard --version`
//! (`SWITCHBOARD_COMMIT`: the short hash, with `-modified` when the work tree had changes;
//! `unknown` outside a git checkout or without git). It reads git's state and changes
//! nothing; the product itself starts no process here.

use std::path::PathBuf;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let output = Command::new("git").args(args).output().ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

fn main() {
    let commit = git(&["rev-parse", "--short=12", "HEAD"]);
    let modified = git(&["status", "--porcelain", "--untracked-files=no"])
        .is_some_and(|status| !status.is_empty());
    let shown = match commit {
        Some(hash) if modified => format!("{hash}-modified"),
        Some(hash) => hash,
        None => "unknown".to_owned(),
    };
    println!("cargo:rustc-env=SWITCHBOARD_COMMIT={shown}");
    // Built again when HEAD moves (a checkout or a commit on the branch).
    if let Some(git_dir) = git(&["rev-parse", "--absolute-git-dir"]) {
        let git_dir = PathBuf::from(git_dir);
        println!("cargo:rerun-if-changed={}", git_dir.join("HEAD").display());
        if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
            println!("cargo:rerun-if-changed={}", git_dir.join(branch).display());
        }
        println!(
            "cargo:rerun-if-changed={}",
            git_dir.join("packed-refs").display()
        );
    }
    println!("cargo:rerun-if-changed=build.rs");
}
