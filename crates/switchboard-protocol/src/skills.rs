//! The skills extension (`io.modelcontextprotocol/skills`, SEP-2640): a `skills/list`
//! entry names a skill's `SKILL.md`, carries its frontmatter, and lists every file of the
//! skill with its SHA-256 digest and byte size (or says the skill is generated, "dynamic").
//! Reading an entry checks its shape; verifying content against it is the session's job.

use std::fmt;

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::ShapeError;

/// The extension's identifier, under `capabilities.extensions`.
pub const SKILLS_EXTENSION: &str = "io.modelcontextprotocol/skills";

/// The most files one skill may list (SEP-2640's limit on `resources`).
pub const MAX_SKILL_FILES: usize = 512;

/// The most bytes one skill's files may add up to (SEP-2640's limit: 16 MiB).
pub const MAX_SKILL_BYTES: u64 = 16 * 1024 * 1024;

/// The `resources` value that says a skill's content is generated and has no digests.
pub const DYNAMIC_RESOURCES: &str = "dynamic";

/// One skill as `skills/list` (or `skills/get`) describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct SkillEntry {
    /// The URI of the skill's `SKILL.md`.
    pub uri: String,
    /// The `SKILL.md` YAML frontmatter as the server rendered it in JSON.
    pub frontmatter: Map<String, Value>,
    /// The skill's files, or that it has none to verify against.
    pub resources: SkillResources,
}

/// What an entry says about the skill's files.
#[derive(Debug, Clone, PartialEq)]
pub enum SkillResources {
    /// Every file of the skill, `SKILL.md` included, each once.
    Listed(Vec<SkillFile>),
    /// Generated content: no digests, nothing to verify bytes against.
    Dynamic,
}

/// One file of a skill: where it is and what its bytes must be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillFile {
    /// The file's resource URI.
    pub uri: String,
    /// The SHA-256 of its bytes.
    pub digest: Sha256Digest,
    /// Its length in bytes.
    pub size: u64,
}

/// A SHA-256 digest, written `sha256:<64 lowercase hex digits>` on the wire.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Sha256Digest(pub [u8; 32]);

impl Sha256Digest {
    /// Reads the wire form; anything else (another algorithm, upper case, a wrong length)
    /// is refused.
    pub fn parse(text: &str) -> Result<Sha256Digest, ShapeError> {
        let hex = text
            .strip_prefix("sha256:")
            .ok_or_else(|| format!("digest {text:?} does not start with `sha256:`"))?;
        let digits = hex.as_bytes();
        if digits.len() != 64 {
            return Err(format!("digest {text:?} does not have 64 hex digits").into());
        }
        let mut bytes = [0u8; 32];
        for (byte, pair) in bytes.iter_mut().zip(digits.chunks_exact(2)) {
            let high = lower_hex_value(pair[0]);
            let low = lower_hex_value(pair[1]);
            match (high, low) {
                (Some(high), Some(low)) => *byte = high << 4 | low,
                _ => return Err(format!("digest {text:?} is not lowercase hex").into()),
            }
        }
        Ok(Sha256Digest(bytes))
    }
}

fn lower_hex_value(digit: u8) -> Option<u8> {
    match digit {
        b'0'..=b'9' => Some(digit - b'0'),
        b'a'..=b'f' => Some(digit - b'a' + 10),
        _ => None,
    }
}

impl fmt::Display for Sha256Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("sha256:")?;
        self.0.iter().try_for_each(|byte| write!(f, "{byte:02x}"))
    }
}

impl fmt::Debug for Sha256Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl SkillEntry {
    /// Reads one entry from its JSON text (one element of a `skills/list` page). The
    /// entry must name a `…/SKILL.md`, carry its frontmatter as an object, and list its
    /// files completely — the `SKILL.md` among them, each once, all inside the skill's
    /// directory, at most [`MAX_SKILL_FILES`] — or say `"dynamic"`.
    pub fn from_json_text(text: &str) -> Result<SkillEntry, ShapeError> {
        #[derive(Deserialize)]
        struct WireEntry<'a> {
            uri: String,
            frontmatter: Map<String, Value>,
            #[serde(borrow)]
            resources: &'a RawValue,
        }
        #[derive(Deserialize)]
        struct WireFile {
            uri: String,
            digest: String,
            size: u64,
        }
        let wire: WireEntry<'_> = serde_json::from_str(text).map_err(|e| {
            #[derive(Deserialize)]
            struct UriOnly {
                uri: String,
            }
            match serde_json::from_str::<UriOnly>(text) {
                Ok(UriOnly { uri }) => format!("skill `{uri}` cannot be read: {e}"),
                Err(_) => format!("the skill entry cannot be read: {e}"),
            }
        })?;
        let resources = if wire.resources.get().starts_with('[') {
            serde_json::from_str::<Vec<WireFile>>(wire.resources.get()).map(WireResources::Listed)
        } else {
            serde_json::from_str::<String>(wire.resources.get()).map(WireResources::Marker)
        };
        let resources = resources
            .map_err(|e| format!("skill `{}`: `resources` cannot be read: {e}", wire.uri))?;
        enum WireResources {
            Listed(Vec<WireFile>),
            Marker(String),
        }
        let uri = wire.uri;
        let problem = |detail: String| ShapeError::new(format!("skill `{uri}`: {detail}"));
        let Some(root) = uri
            .strip_suffix("/SKILL.md")
            .filter(|root| !root.is_empty())
        else {
            return Err(problem("the URI does not name a `…/SKILL.md`".into()));
        };
        let resources = match resources {
            WireResources::Marker(marker) if marker == DYNAMIC_RESOURCES => SkillResources::Dynamic,
            WireResources::Marker(other) => {
                return Err(problem(format!(
                    "`resources` is {other:?}, neither a list nor \"{DYNAMIC_RESOURCES}\""
                )));
            }
            WireResources::Listed(files) => {
                if files.len() > MAX_SKILL_FILES {
                    return Err(problem(format!(
                        "{} files listed, more than the {MAX_SKILL_FILES} a skill may have",
                        files.len()
                    )));
                }
                let mut listed: Vec<SkillFile> = Vec::with_capacity(files.len());
                for file in files {
                    if file.uri != uri && !is_inside(root, &file.uri) {
                        return Err(problem(format!(
                            "file `{}` is not inside the skill's directory",
                            file.uri
                        )));
                    }
                    if listed.iter().any(|seen| seen.uri == file.uri) {
                        return Err(problem(format!("file `{}` is listed twice", file.uri)));
                    }
                    let digest =
                        Sha256Digest::parse(&file.digest).map_err(|e| problem(e.to_string()))?;
                    listed.push(SkillFile {
                        uri: file.uri,
                        digest,
                        size: file.size,
                    });
                }
                if !listed.iter().any(|file| file.uri == uri) {
                    return Err(problem(
                        "`resources` does not list the SKILL.md itself".into(),
                    ));
                }
                SkillResources::Listed(listed)
            }
        };
        Ok(SkillEntry {
            uri,
            frontmatter: wire.frontmatter,
            resources,
        })
    }

    /// The listed file at `uri`, if the entry lists files and that one among them.
    pub fn file(&self, uri: &str) -> Option<&SkillFile> {
        match &self.resources {
            SkillResources::Listed(files) => files.iter().find(|file| file.uri == uri),
            SkillResources::Dynamic => None,
        }
    }

    /// The skill's directory: its URI without `/SKILL.md`.
    pub fn root(&self) -> &str {
        self.uri.strip_suffix("/SKILL.md").unwrap_or(&self.uri)
    }

    /// Whether `uri` is a file inside the skill's directory (no `.` or `..` segments).
    pub fn contains(&self, uri: &str) -> bool {
        uri == self.uri || is_inside(self.root(), uri)
    }
}

/// Whether `uri` is below `root` (`root/…`) without `.`, `..` or empty segments.
fn is_inside(root: &str, uri: &str) -> bool {
    uri.strip_prefix(root)
        .and_then(|rest| rest.strip_prefix('/'))
        .is_some_and(|path| {
            path.split('/')
                .all(|segment| !segment.is_empty() && segment != "." && segment != "..")
        })
}

/// Whether a server's capabilities declare the skills extension.
pub fn declares_skills(extensions: Option<&Value>) -> bool {
    extensions
        .and_then(Value::as_object)
        .is_some_and(|declared| declared.contains_key(SKILLS_EXTENSION))
}

#[cfg(test)]
mod tests {
    use expect_test::{Expect, expect};

    use super::*;

    const DIGEST: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    fn check(text: &str, expect: Expect) {
        let shown = match SkillEntry::from_json_text(text) {
            Ok(entry) => format!("{entry:?}"),
            Err(problem) => format!("problem: {problem}"),
        };
        expect.assert_eq(&shown);
    }

    #[test]
    fn a_listed_entry_is_read_with_its_files() {
        check(
            &format!(
                r#"{{"uri":"skill://a/b/SKILL.md","frontmatter":{{"name":"b","description":"d"}},
                "resources":[{{"uri":"skill://a/b/SKILL.md","digest":"{DIGEST}","size":3}},
                {{"uri":"skill://a/b/x/y.md","digest":"{DIGEST}","size":0}}],"extra":1}}"#
            ),
            expect![[
                r#"SkillEntry { uri: "skill://a/b/SKILL.md", frontmatter: {"name": String("b"), "description": String("d")}, resources: Listed([SkillFile { uri: "skill://a/b/SKILL.md", digest: sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef, size: 3 }, SkillFile { uri: "skill://a/b/x/y.md", digest: sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef, size: 0 }]) }"#
            ]],
        );
        check(
            r#"{"uri":"skill://g/SKILL.md","frontmatter":{},"resources":"dynamic"}"#,
            expect![[
                r#"SkillEntry { uri: "skill://g/SKILL.md", frontmatter: {}, resources: Dynamic }"#
            ]],
        );
    }

    #[test]
    fn a_malformed_entry_is_a_problem() {
        let file = |uri: &str, digest: &str, size: &str| {
            format!(r#"{{"uri":"{uri}","digest":"{digest}","size":{size}}}"#)
        };
        let entry = |files: &[String]| {
            format!(
                r#"{{"uri":"skill://s/SKILL.md","frontmatter":{{"name":"s"}},"resources":[{}]}}"#,
                files.join(",")
            )
        };
        let own = file("skill://s/SKILL.md", DIGEST, "1");
        let cases = [
            entry(&[]),
            entry(&[own.clone(), own.clone()]),
            entry(&[own.clone(), file("skill://other/x.md", DIGEST, "1")]),
            entry(&[own.clone(), file("skill://s/../t/x.md", DIGEST, "1")]),
            entry(&[file("skill://s/SKILL.md", &DIGEST.to_uppercase(), "1")]),
            entry(&[file("skill://s/SKILL.md", "md5:00", "1")]),
            entry(&[file("skill://s/SKILL.md", DIGEST, "-1")]),
            entry(&[file("skill://s/SKILL.md", DIGEST, "1e3")]),
            r#"{"uri":"skill://s/README.md","frontmatter":{},"resources":"dynamic"}"#.into(),
            r#"{"uri":"skill://s/SKILL.md","frontmatter":{},"resources":"static"}"#.into(),
            r#"{"uri":"skill://s/SKILL.md","frontmatter":[],"resources":"dynamic"}"#.into(),
            r#"{"uri":"skill://s/SKILL.md","frontmatter":{}}"#.into(),
            r#"{"frontmatter":{},"resources":"dynamic"}"#.into(),
        ];
        let problems: Vec<String> = cases
            .iter()
            .map(|text| match SkillEntry::from_json_text(text) {
                Ok(entry) => format!("read: {entry:?}"),
                Err(problem) => problem.to_string(),
            })
            .collect();
        expect![[r#"
            skill `skill://s/SKILL.md`: `resources` does not list the SKILL.md itself
            skill `skill://s/SKILL.md`: file `skill://s/SKILL.md` is listed twice
            skill `skill://s/SKILL.md`: file `skill://other/x.md` is not inside the skill's directory
            skill `skill://s/SKILL.md`: file `skill://s/../t/x.md` is not inside the skill's directory
            skill `skill://s/SKILL.md`: digest "SHA256:0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF" does not start with `sha256:`
            skill `skill://s/SKILL.md`: digest "md5:00" does not start with `sha256:`
            skill `skill://s/SKILL.md`: `resources` cannot be read: invalid value: integer `-1`, expected u64 at line 1 column 121
            skill `skill://s/SKILL.md`: `resources` cannot be read: invalid type: floating point `1000.0`, expected u64 at line 1 column 122
            skill `skill://s/README.md`: the URI does not name a `…/SKILL.md`
            skill `skill://s/SKILL.md`: `resources` is "static", neither a list nor "dynamic"
            skill `skill://s/SKILL.md` cannot be read: invalid type: sequence, expected a map at line 1 column 42
            skill `skill://s/SKILL.md` cannot be read: missing field `resources` at line 1 column 45
            the skill entry cannot be read: missing field `uri` at line 1 column 40"#]]
        .assert_eq(&problems.join("\n"));
    }

    #[test]
    fn too_many_files_are_a_problem() {
        let files: Vec<String> = (0..=MAX_SKILL_FILES)
            .map(|n| format!(r#"{{"uri":"skill://s/f{n}","digest":"{DIGEST}","size":1}}"#))
            .collect();
        let text = format!(
            r#"{{"uri":"skill://s/SKILL.md","frontmatter":{{}},"resources":[{}]}}"#,
            files.join(",")
        );
        check(
            &text,
            expect![
                "problem: skill `skill://s/SKILL.md`: 513 files listed, more than the 512 a skill may have"
            ],
        );
    }

    #[test]
    fn digests_round_trip_and_refuse_other_forms() {
        let digest = Sha256Digest::parse(DIGEST).expect("digest");
        assert_eq!(digest.to_string(), DIGEST);
        let refused: Vec<String> = [
            "sha256:0123",
            "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdeg",
            "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
        ]
        .iter()
        .filter_map(|text| Sha256Digest::parse(text).err().map(|e| e.to_string()))
        .collect();
        expect![[r#"
            digest "sha256:0123" does not have 64 hex digits
            digest "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdeg" is not lowercase hex
            digest "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" does not start with `sha256:`"#]]
        .assert_eq(&refused.join("\n"));
    }

    #[test]
    fn skill_directories_hold_their_files_only() {
        let entry = SkillEntry {
            uri: "skill://a/b/SKILL.md".into(),
            frontmatter: Map::new(),
            resources: SkillResources::Dynamic,
        };
        assert_eq!(entry.root(), "skill://a/b");
        let inside: Vec<bool> = [
            "skill://a/b/SKILL.md",
            "skill://a/b/refs/x.md",
            "skill://a/bc/x.md",
            "skill://a/b/",
            "skill://a/b/./x",
            "skill://a/b//x",
        ]
        .iter()
        .map(|uri| entry.contains(uri))
        .collect();
        assert_eq!(inside, [true, true, false, false, false, false]);
    }
}
