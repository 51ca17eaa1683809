//! What machine the benchmark ran on and which versions of everything it used.

use std::path::Path;
use std::process::{Command, Stdio};

use serde::{Deserialize, Serialize};

/// The machine.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Machine {
    /// `uname -a`.
    pub uname: String,
    /// `nproc`.
    pub nproc: String,
    /// `model name` from /proc/cpuinfo.
    pub cpu_model: String,
    /// `MemTotal` from /proc/meminfo.
    pub memory: String,
}

impl Machine {
    /// The cores `nproc` counted (1 when it said nothing usable).
    pub fn cores(&self) -> f64 {
        self.nproc
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|n| *n >= 1.0)
            .unwrap_or(1.0)
    }
}

/// Versions of the toolchains and SDKs involved.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Versions {
    /// `rustc -V`.
    pub rustc: String,
    /// Node running the TypeScript client and server-everything.
    pub node: String,
    /// Python running the Python client.
    pub python: String,
    /// rmcp, from Cargo.lock.
    pub rmcp: String,
    /// tokio, from Cargo.lock.
    pub tokio: String,
    /// `@modelcontextprotocol/sdk`.
    pub ts_sdk: String,
    /// `@modelcontextprotocol/server-everything`.
    pub server_everything: String,
    /// Python `mcp`.
    pub python_sdk: String,
    /// `@modelcontextprotocol/inspector` (scenario 5); empty in results from before it was
    /// measured.
    #[serde(default)]
    pub inspector: String,
    /// `valgrind --version`.
    pub valgrind: String,
    /// Our workspace version.
    pub switchboard: String,
}

/// Describes this machine.
pub fn machine() -> Machine {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    Machine {
        uname: output("uname", &["-a"]),
        nproc: output("nproc", &[]),
        cpu_model: field(&cpuinfo, "model name"),
        memory: field(&meminfo, "MemTotal"),
    }
}

/// Versions, given the repository root and the peers' paths.
pub fn versions(root: &Path, node: &Path, python: &Path) -> Versions {
    let lock = std::fs::read_to_string(root.join("Cargo.lock")).unwrap_or_default();
    let npm = root.join("target/peers/npm/node_modules/@modelcontextprotocol");
    Versions {
        rustc: output("rustc", &["-V"]),
        node: output(&node.to_string_lossy(), &["--version"]),
        python: output(&python.to_string_lossy(), &["--version"]),
        rmcp: lock_version(&lock, "rmcp"),
        tokio: lock_version(&lock, "tokio"),
        ts_sdk: package_version(&npm.join("sdk/package.json")),
        server_everything: package_version(&npm.join("server-everything/package.json")),
        inspector: package_version(&root.join(
            "target/peers/inspector/node_modules/@modelcontextprotocol/inspector/package.json",
        )),
        python_sdk: output(
            &python.to_string_lossy(),
            &[
                "-c",
                "import importlib.metadata as m; print(m.version('mcp'))",
            ],
        ),
        valgrind: output("valgrind", &["--version"]),
        switchboard: env!("CARGO_PKG_VERSION").to_owned(),
    }
}

/// The trimmed stdout of a command, or `unavailable (...)`.
pub fn output(program: &str, args: &[&str]) -> String {
    match Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .output()
    {
        Ok(out) if out.status.success() => {
            let text = String::from_utf8_lossy(&out.stdout).trim().to_owned();
            if text.is_empty() {
                String::from_utf8_lossy(&out.stderr).trim().to_owned()
            } else {
                text
            }
        }
        Ok(out) => format!("unavailable ({program} exited with {})", out.status),
        Err(e) => format!("unavailable ({program}: {e})"),
    }
}

fn field(text: &str, name: &str) -> String {
    text.lines()
        .find(|l| l.starts_with(name))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_owned())
        .unwrap_or_else(|| "unknown".into())
}

fn lock_version(lock: &str, package: &str) -> String {
    let header = format!("name = \"{package}\"");
    let mut lines = lock.lines();
    while let Some(line) = lines.next() {
        if line.trim() == header
            && let Some(version) = lines.next().and_then(|l| l.strip_prefix("version = "))
        {
            return version.trim_matches('"').to_owned();
        }
    }
    "unknown".into()
}

fn package_version(path: &Path) -> String {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
        .and_then(|v| v.get("version").and_then(|v| v.as_str()).map(str::to_owned))
        .unwrap_or_else(|| "not installed".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_versions_from_a_lock_file() {
        let lock = "[[package]]\nname = \"rmcp\"\nversion = \"3.11.0\"\nsource = \"x\"\n";
        assert_eq!(lock_version(lock, "rmcp"), "3.11.0");
        assert_eq!(lock_version(lock, "tokio"), "unknown");
        assert_eq!(field("model name\t: Some CPU\n", "model name"), "Some CPU");
    }
}
