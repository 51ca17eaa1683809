//! From a [`SandboxPolicy`] to the concrete [`LaunchPolicy`] one start applies: templates
//! expanded, default paths added, and listed paths that would open a secret refused.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::policy::{Limits, NetworkPolicy, SandboxPolicy, Scoping};

/// What one start of a sandboxed server applies to itself, every path absolute. Passed to
/// the launcher as JSON on its command line (paths only: no secret goes in it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LaunchPolicy {
    /// Readable (and executable) trees.
    pub read: Vec<PathBuf>,
    /// Readable and writable trees.
    pub write: Vec<PathBuf>,
    /// What connections it may open.
    pub network: NetworkPolicy,
    /// Resource limits.
    pub limits: Limits,
    /// Whether signals and abstract unix sockets are scoped.
    pub scopes: Scoping,
    /// A pids cgroup made for this start, which the launcher joins and bounds (the process
    /// limit that holds for root too).
    pub pids_cgroup: Option<PathBuf>,
}

/// What the templates of one start stand for.
#[derive(Debug, Clone)]
pub struct StartPlaces {
    /// `${cwd}`: the server's working folder.
    pub cwd: PathBuf,
    /// `${tmp}`: the private temp folder made for this start.
    pub tmp: PathBuf,
    /// `${home}`: the server's home folder, when known.
    pub home: Option<PathBuf>,
    /// The program as found (a path), before and after following symlinks.
    pub program: Vec<PathBuf>,
    /// Arguments that name existing files (a script the interpreter runs).
    pub script_files: Vec<PathBuf>,
}

/// A listed path would open what a sandbox never opens.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "sandbox: `{field}` lists `{listed}`, which would open `{secret}` (credentials); \
     Landlock cannot leave a hole in an allowed tree: list narrower paths"
)]
pub struct SecretPathError {
    /// `filesystem.read` or `filesystem.write`.
    pub field: &'static str,
    /// The listed path, expanded.
    pub listed: PathBuf,
    /// The credential path it contains or lies in.
    pub secret: PathBuf,
}

/// Read-only system trees every sandboxed server gets (those that exist).
pub const SYSTEM_READ: &[&str] = &[
    "/usr",
    "/lib",
    "/lib64",
    "/lib32",
    "/bin",
    "/sbin",
    "/etc",
    "/opt",
    "/proc",
    "/sys/devices/system/cpu",
    "/sys/fs/cgroup",
    "/dev/urandom",
    "/dev/random",
    "/dev/zero",
];

/// Devices a sandboxed server may write.
pub const DEVICES_WRITE: &[&str] = &["/dev/null"];

/// Paths under the home folder that hold credentials: never opened by default, and a
/// listed path that contains one (or lies in one) is refused.
pub const HOME_SECRETS: &[&str] = &[
    ".ssh",
    ".aws",
    ".azure",
    ".kube",
    ".config/gcloud",
    ".config/gh",
    ".netrc",
    ".docker/config.json",
    ".mozilla",
    ".config/google-chrome",
    ".config/chromium",
    ".local/share/keyrings",
    ".gnupg",
    ".password-store",
    // Switchboard's own: configuration (with its servers' environment), the trust store,
    // and saved logins' tokens.
    ".config/switchboard",
    ".local/share/switchboard",
];

impl SandboxPolicy {
    /// The concrete policy for one start. `extra_secrets` are further paths never to open
    /// (the host's token and trust files where they are not in their default places).
    pub fn resolve(
        &self,
        places: &StartPlaces,
        extra_secrets: &[PathBuf],
    ) -> Result<LaunchPolicy, SecretPathError> {
        let mut secrets: Vec<PathBuf> = extra_secrets.to_vec();
        if let Some(home) = &places.home {
            secrets.extend(HOME_SECRETS.iter().map(|s| home.join(s)));
        }
        let secrets: Vec<PathBuf> = secrets.iter().flat_map(|s| both_forms(s)).collect();
        let expand = |template: &str| expand(template, places);
        let mut read: Vec<PathBuf> = SYSTEM_READ.iter().map(PathBuf::from).collect();
        // The program's install tree, so interpreters find their libraries, and the folder
        // of the script they run. Left out when it would open a secret.
        let mut derived: Vec<PathBuf> = places.program.iter().map(|p| prefix_of(p)).collect();
        derived.extend(places.script_files.iter().map(|p| script_root(p)));
        derived.push(places.cwd.clone());
        for path in derived {
            if find_secret(&path, &secrets).is_none() && path != Path::new("/") {
                read.push(path);
            }
        }
        let mut write: Vec<PathBuf> = DEVICES_WRITE.iter().map(PathBuf::from).collect();
        write.push(places.tmp.clone());
        for (field, listed, into) in [
            ("filesystem.read", &self.filesystem.read, &mut read),
            ("filesystem.write", &self.filesystem.write, &mut write),
        ] {
            for template in listed {
                let path = expand(template);
                if let Some(secret) = find_secret(&path, &secrets) {
                    return Err(SecretPathError {
                        field,
                        listed: path,
                        secret,
                    });
                }
                into.push(path);
            }
        }
        read.dedup();
        write.dedup();
        Ok(LaunchPolicy {
            read,
            write,
            network: self.network.clone(),
            limits: self.limits.clone(),
            scopes: self.scopes,
            pids_cgroup: None,
        })
    }
}

/// A path as given and, when it exists, with symlinks followed.
fn both_forms(path: &Path) -> Vec<PathBuf> {
    let mut forms = vec![path.to_owned()];
    if let Ok(real) = path.canonicalize()
        && real != path
    {
        forms.push(real);
    }
    forms
}

/// The secret `path` contains or lies in, if any (symlinks followed where they exist).
fn find_secret(path: &Path, secrets: &[PathBuf]) -> Option<PathBuf> {
    both_forms(path).into_iter().find_map(|form| {
        secrets
            .iter()
            .find(|secret| secret.starts_with(&form) || form.starts_with(secret))
            .cloned()
    })
}

fn expand(template: &str, places: &StartPlaces) -> PathBuf {
    let mut text = template.to_owned();
    let prefix = places.program.first().map(|p| prefix_of(p));
    let pairs = [
        ("${cwd}", Some(&places.cwd)),
        ("${tmp}", Some(&places.tmp)),
        ("${home}", places.home.as_ref()),
        ("${prefix}", prefix.as_ref()),
    ];
    for (name, value) in pairs {
        if let Some(value) = value {
            text = text.replace(name, &value.display().to_string());
        }
    }
    let path = PathBuf::from(text);
    if path.is_absolute() {
        path
    } else {
        places.cwd.join(path)
    }
}

/// A program's install tree: for `/x/node/bin/node`, `/x/node`; for a program not in a
/// `bin` folder, its folder.
pub fn prefix_of(program: &Path) -> PathBuf {
    let folder = program.parent().unwrap_or(Path::new("/"));
    match folder.file_name().and_then(|n| n.to_str()) {
        Some("bin" | "sbin") => folder.parent().unwrap_or(folder).to_owned(),
        _ => folder.to_owned(),
    }
}

/// The tree a script needs: for a file under `node_modules`, the folder holding the
/// outermost `node_modules` (the package's dependencies); else the script's folder.
fn script_root(script: &Path) -> PathBuf {
    let outermost = script
        .ancestors()
        .filter(|a| a.file_name().is_some_and(|n| n == "node_modules"))
        .last();
    match outermost.and_then(Path::parent) {
        Some(root) => root.to_owned(),
        None => script.parent().unwrap_or(Path::new("/")).to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn places() -> StartPlaces {
        StartPlaces {
            cwd: "/work/project".into(),
            tmp: "/tmp/sb-1".into(),
            home: Some("/home/u".into()),
            program: vec!["/x/node/bin/node".into()],
            script_files: vec!["/p/node_modules/@a/b/dist/index.js".into()],
        }
    }

    #[test]
    fn defaults_and_templates_expand_and_secrets_are_refused() {
        let mut policy = SandboxPolicy::default();
        policy.filesystem.write = vec!["${home}/notes".into(), "out".into()];
        let resolved = policy.resolve(&places(), &[]).map(|p| (p.read, p.write));
        let (read, write) = resolved.unwrap_or_default();
        assert!(read.contains(&PathBuf::from("/x/node")));
        assert!(read.contains(&PathBuf::from("/p")));
        assert!(read.contains(&PathBuf::from("/work/project")));
        assert!(write.contains(&PathBuf::from("/home/u/notes")));
        assert!(write.contains(&PathBuf::from("/work/project/out")));
        assert!(write.contains(&PathBuf::from("/tmp/sb-1")));

        for listed in ["${home}", "/home", "${home}/.ssh/keys", "/home/u/.config"] {
            let mut policy = SandboxPolicy::default();
            policy.filesystem.read = vec![listed.into()];
            let error = policy.resolve(&places(), &[]).err().map(|e| e.to_string());
            assert!(error.is_some_and(|e| e.contains("credentials")), "{listed}");
        }
    }

    #[test]
    fn a_working_folder_holding_secrets_is_left_out() {
        let mut places = places();
        places.cwd = "/home/u".into();
        let read = SandboxPolicy::default()
            .resolve(&places, &[])
            .map(|p| p.read)
            .unwrap_or_default();
        assert!(!read.contains(&PathBuf::from("/home/u")));
    }
}
