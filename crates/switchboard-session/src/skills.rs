//! Loading skills (the `io.modelcontextprotocol/skills` extension, SEP-2640) as a host
//! must: nothing is read before a load is asked for; every file read is checked against
//! its entry (byte size first, then the SHA-256 digest) before its content is used; the
//! `SKILL.md` frontmatter is parsed and compared field by field with the entry's; and what
//! is read is capped per file and per skill. The checks here are pure; the session's
//! `load_skill` and `read_skill_file` do the reading.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use switchboard_protocol::{MAX_SKILL_BYTES, Sha256Digest, SkillEntry, SkillFile, SkillResources};

use crate::SessionError;

/// What a host lets a skill cost, and whether it loads skills it cannot verify.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillLimits {
    /// The most bytes one file may have (claimed by its entry, or read for a dynamic skill).
    /// Default 8 MiB, half the frame cap: a file whose JSON answer cannot fit a frame
    /// could never be read anyway.
    pub max_file_bytes: u64,
    /// The most bytes one skill's files may add up to. Default 16 MiB, SEP-2640's limit.
    pub max_skill_bytes: u64,
    /// What to do with a skill whose entry says `resources: "dynamic"`.
    pub dynamic: DynamicSkills,
}

impl Default for SkillLimits {
    fn default() -> SkillLimits {
        SkillLimits {
            max_file_bytes: 8 * 1024 * 1024,
            max_skill_bytes: MAX_SKILL_BYTES,
            dynamic: DynamicSkills::Refuse,
        }
    }
}

/// Whether a skill without digests (`resources: "dynamic"`) is loaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DynamicSkills {
    /// Not loaded: nothing binds its content to what was listed ([`SkillError::Unverifiable`]).
    Refuse,
    /// Loaded unverified: its frontmatter is still compared and its reads still capped,
    /// and the [`LoadedSkill`] says [`Integrity::Unverified`].
    LoadUnverified,
}

/// Whether a loaded skill's bytes were checked against digests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Integrity {
    /// Every file read was checked against its entry's size and digest.
    Verified,
    /// A dynamic skill: sizes capped, frontmatter compared, no digests to check.
    Unverified,
}

/// Why a skill or one of its files was not loaded. Verification failures carry what was
/// expected and what came; none of them leaves content for the caller to use.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SkillError {
    /// The server does not declare the skills extension.
    #[error("MCP server `{server}` does not offer skills")]
    NotOffered {
        /// The server.
        server: String,
    },
    /// No skill with that `SKILL.md` URI is listed (or known to `skills/get`).
    #[error("MCP server `{server}` serves no skill `{uri}`")]
    UnknownSkill {
        /// The server.
        server: String,
        /// The URI asked for.
        uri: String,
    },
    /// A read of a file the skill's entry does not list: a change to the skill, refused
    /// like a digest mismatch.
    #[error("skill `{skill}` does not list `{uri}` among its files")]
    FileNotListed {
        /// The skill's `SKILL.md` URI.
        skill: String,
        /// The file asked for.
        uri: String,
    },
    /// A file larger than the per-file cap (as claimed by its entry, before any read; or as
    /// read, for a dynamic skill).
    #[error("`{uri}` has {size} bytes, over the cap of {cap} for one skill file")]
    FileTooLarge {
        /// The file.
        uri: String,
        /// Its size, claimed or read.
        size: u64,
        /// The cap.
        cap: u64,
    },
    /// A skill whose files add up to more than the per-skill cap (claimed by its entry,
    /// before any read; or as read, for a dynamic skill).
    #[error("skill `{skill}` has {size} bytes of files, over the cap of {cap} for one skill")]
    SkillTooLarge {
        /// The skill's `SKILL.md` URI.
        skill: String,
        /// The bytes its files add up to.
        size: u64,
        /// The cap.
        cap: u64,
    },
    /// The bytes read are not as many as the entry says.
    #[error("`{uri}`: {actual} bytes were read where its entry says {expected}; not used")]
    SizeMismatch {
        /// The file.
        uri: String,
        /// The entry's size.
        expected: u64,
        /// The bytes read.
        actual: u64,
    },
    /// The bytes read do not have the entry's digest.
    #[error("`{uri}`: the content has digest {actual} where its entry says {expected}; not used")]
    DigestMismatch {
        /// The file.
        uri: String,
        /// The entry's digest.
        expected: Sha256Digest,
        /// The content's.
        actual: Sha256Digest,
    },
    /// The `SKILL.md` frontmatter and the entry's differ in a field (present on one side
    /// only, or with another value).
    #[error(
        "skill `{skill}`: its SKILL.md frontmatter differs from its entry's in `{field}`; not loaded"
    )]
    FrontmatterMismatch {
        /// The skill's `SKILL.md` URI.
        skill: String,
        /// The first field that differs.
        field: String,
    },
    /// The `SKILL.md` does not start with a `---` fenced YAML frontmatter.
    #[error("skill `{skill}`: its SKILL.md has no YAML frontmatter; not loaded")]
    FrontmatterMissing {
        /// The skill's `SKILL.md` URI.
        skill: String,
    },
    /// The frontmatter is not YAML, or not a mapping of field names to values.
    #[error("skill `{skill}`: its SKILL.md frontmatter cannot be read: {detail}")]
    FrontmatterInvalid {
        /// The skill's `SKILL.md` URI.
        skill: String,
        /// The parser's word.
        detail: String,
    },
    /// The `SKILL.md` is not UTF-8 text.
    #[error("skill `{skill}`: its SKILL.md is not UTF-8 text")]
    NotText {
        /// The skill's `SKILL.md` URI.
        skill: String,
    },
    /// The `resources/read` result has no content for the URI asked for, or content that
    /// is neither text nor base64.
    #[error("`{uri}`: {detail}")]
    UnusableContent {
        /// The file.
        uri: String,
        /// What is wrong.
        detail: String,
    },
    /// The skill's entry says `resources: "dynamic"` and the host's limits refuse such
    /// skills ([`DynamicSkills::Refuse`]).
    #[error(
        "skill `{skill}` is generated (`resources: \"dynamic\"`): nothing to verify it against, not loaded"
    )]
    Unverifiable {
        /// The skill's `SKILL.md` URI.
        skill: String,
    },
    /// A read of a skill's file from another server than the one it was loaded from
    /// (a skill of one server never causes a read from another).
    #[error("skill `{skill}` was loaded from MCP server `{loaded_from}`, not `{server}`")]
    OtherServer {
        /// The skill's `SKILL.md` URI.
        skill: String,
        /// The server it was loaded from.
        loaded_from: String,
        /// The server asked to read it.
        server: String,
    },
    /// The request failed.
    #[error(transparent)]
    Session(#[from] SessionError),
}

impl SkillError {
    /// Whether the server's content failed verification against its entry (size, digest,
    /// frontmatter, an unlisted file), as opposed to a refusal by the host's limits or a
    /// failed request.
    pub fn is_verification_failure(&self) -> bool {
        matches!(
            self,
            SkillError::FileNotListed { .. }
                | SkillError::SizeMismatch { .. }
                | SkillError::DigestMismatch { .. }
                | SkillError::FrontmatterMismatch { .. }
                | SkillError::FrontmatterMissing { .. }
                | SkillError::FrontmatterInvalid { .. }
                | SkillError::NotText { .. }
        )
    }
}

/// A skill whose `SKILL.md` was read, verified and matched against its entry: what a host
/// puts in the model's context. It holds the entry it was loaded from, which every later
/// read of the skill's files is checked against.
#[derive(Debug, Clone)]
pub struct LoadedSkill {
    /// The server it was loaded from: its files are read from that server only.
    pub server: Arc<str>,
    /// The entry the skill was loaded from.
    pub entry: SkillEntry,
    /// The whole `SKILL.md`, frontmatter included.
    pub skill_md: String,
    /// Whether its bytes were checked against digests.
    pub integrity: Integrity,
    body_start: usize,
    /// Bytes read so far for a dynamic skill (shared by clones), against the skill cap.
    unverified_bytes: Arc<AtomicU64>,
}

impl LoadedSkill {
    /// The `SKILL.md` after its frontmatter: the instructions.
    pub fn body(&self) -> &str {
        self.skill_md.get(self.body_start..).unwrap_or_default()
    }

    /// The frontmatter (the entry's, which the `SKILL.md`'s was found equal to).
    pub fn frontmatter(&self) -> &Map<String, Value> {
        &self.entry.frontmatter
    }

    /// The skill's name, from its frontmatter.
    pub fn name(&self) -> Option<&str> {
        self.entry.frontmatter.get("name").and_then(Value::as_str)
    }
}

/// One file of a loaded skill, verified against its entry (or capped, for a dynamic skill).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillContent {
    /// The file's URI.
    pub uri: String,
    /// Its MIME type, as the server said.
    pub mime_type: Option<String>,
    /// Its bytes.
    pub bytes: Vec<u8>,
}

impl SkillContent {
    /// The bytes as text, when they are UTF-8.
    pub fn text(&self) -> Option<&str> {
        std::str::from_utf8(&self.bytes).ok()
    }
}

/// Refuses, before anything is read, a skill the host's limits do not allow: a dynamic one
/// under [`DynamicSkills::Refuse`], one whose listed sizes add up past the skill cap.
pub(crate) fn check_before_load(
    entry: &SkillEntry,
    limits: &SkillLimits,
) -> Result<Integrity, SkillError> {
    match &entry.resources {
        SkillResources::Dynamic => match limits.dynamic {
            DynamicSkills::Refuse => Err(SkillError::Unverifiable {
                skill: entry.uri.clone(),
            }),
            DynamicSkills::LoadUnverified => Ok(Integrity::Unverified),
        },
        SkillResources::Listed(files) => {
            let size = files
                .iter()
                .fold(0u64, |total, file| total.saturating_add(file.size));
            if size > limits.max_skill_bytes {
                return Err(SkillError::SkillTooLarge {
                    skill: entry.uri.clone(),
                    size,
                    cap: limits.max_skill_bytes,
                });
            }
            Ok(Integrity::Verified)
        }
    }
}

/// What a read of `uri` within `entry` is checked against: the listed file (refused
/// before the read when its claimed size is over the file cap), or, for a dynamic skill,
/// only the caps. A file the entry does not list is refused.
pub(crate) fn file_to_read<'e>(
    entry: &'e SkillEntry,
    uri: &str,
    limits: &SkillLimits,
) -> Result<Option<&'e SkillFile>, SkillError> {
    match &entry.resources {
        SkillResources::Listed(_) => {
            let file = entry.file(uri).ok_or_else(|| SkillError::FileNotListed {
                skill: entry.uri.clone(),
                uri: uri.to_owned(),
            })?;
            if file.size > limits.max_file_bytes {
                return Err(SkillError::FileTooLarge {
                    uri: uri.to_owned(),
                    size: file.size,
                    cap: limits.max_file_bytes,
                });
            }
            Ok(Some(file))
        }
        SkillResources::Dynamic if entry.contains(uri) => Ok(None),
        SkillResources::Dynamic => Err(SkillError::FileNotListed {
            skill: entry.uri.clone(),
            uri: uri.to_owned(),
        }),
    }
}

/// Checks bytes read against their listed file: the length first (a read of another
/// length fails without its digest being computed), then the SHA-256.
pub fn verify_file(file: &SkillFile, bytes: &[u8]) -> Result<(), SkillError> {
    let actual = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
    if actual != file.size {
        return Err(SkillError::SizeMismatch {
            uri: file.uri.clone(),
            expected: file.size,
            actual,
        });
    }
    let actual = Sha256Digest(Sha256::digest(bytes).into());
    if actual != file.digest {
        return Err(SkillError::DigestMismatch {
            uri: file.uri.clone(),
            expected: file.digest,
            actual,
        });
    }
    Ok(())
}

/// Checks the bytes of a dynamic skill's file against the caps, counting them into the
/// skill's total.
pub(crate) fn cap_unverified(
    skill: &LoadedSkillBudget<'_>,
    uri: &str,
    bytes: &[u8],
    limits: &SkillLimits,
) -> Result<(), SkillError> {
    let size = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
    if size > limits.max_file_bytes {
        return Err(SkillError::FileTooLarge {
            uri: uri.to_owned(),
            size,
            cap: limits.max_file_bytes,
        });
    }
    let before = skill.read.fetch_add(size, Ordering::Relaxed);
    let total = before.saturating_add(size);
    if total > limits.max_skill_bytes {
        return Err(SkillError::SkillTooLarge {
            skill: skill.skill.to_owned(),
            size: total,
            cap: limits.max_skill_bytes,
        });
    }
    Ok(())
}

/// A dynamic skill's running total of bytes read.
pub(crate) struct LoadedSkillBudget<'a> {
    pub(crate) skill: &'a str,
    pub(crate) read: &'a AtomicU64,
}

/// Turns a verified `SKILL.md` into a loaded skill: UTF-8 text, a frontmatter that parses
/// and equals the entry's field by field.
pub(crate) fn accept_skill_md(
    server: &Arc<str>,
    entry: &SkillEntry,
    bytes: Vec<u8>,
    integrity: Integrity,
) -> Result<LoadedSkill, SkillError> {
    let skill = || entry.uri.clone();
    let skill_md = String::from_utf8(bytes).map_err(|_| SkillError::NotText { skill: skill() })?;
    let (yaml, body_start) = split_frontmatter(&skill_md)
        .ok_or_else(|| SkillError::FrontmatterMissing { skill: skill() })?;
    let parsed = parse_frontmatter(yaml).map_err(|detail| SkillError::FrontmatterInvalid {
        skill: skill(),
        detail,
    })?;
    if let Some(field) = first_difference(&entry.frontmatter, &parsed) {
        return Err(SkillError::FrontmatterMismatch {
            skill: skill(),
            field,
        });
    }
    let read = match &entry.resources {
        SkillResources::Listed(_) => 0,
        SkillResources::Dynamic => u64::try_from(skill_md.len()).unwrap_or(u64::MAX),
    };
    Ok(LoadedSkill {
        server: server.clone(),
        entry: entry.clone(),
        skill_md,
        integrity,
        body_start,
        unverified_bytes: Arc::new(AtomicU64::new(read)),
    })
}

impl LoadedSkill {
    pub(crate) fn budget(&self) -> LoadedSkillBudget<'_> {
        LoadedSkillBudget {
            skill: &self.entry.uri,
            read: &self.unverified_bytes,
        }
    }
}

/// The YAML between a leading `---` line and the next `---` (or `...`) line, and where
/// the body after it starts. `None` when the text does not open with a closed frontmatter.
pub fn split_frontmatter(text: &str) -> Option<(&str, usize)> {
    let text_start = text
        .strip_prefix('\u{feff}')
        .map_or(0, |_| '\u{feff}'.len_utf8());
    let mut lines = text[text_start..].split_inclusive('\n');
    let opening = lines.next()?;
    if opening.trim_end() != "---" {
        return None;
    }
    let yaml_start = text_start + opening.len();
    let mut at = yaml_start;
    for line in lines {
        let fence = line.trim_end();
        if fence == "---" || fence == "..." {
            return Some((&text[yaml_start..at], at + line.len()));
        }
        at += line.len();
    }
    None
}

/// Parses frontmatter YAML into JSON values: a mapping with string keys (an empty
/// frontmatter is an empty mapping). The parser's recursion and alias-expansion limits
/// bound what a small hostile document can cost.
pub fn parse_frontmatter(yaml: &str) -> Result<Map<String, Value>, String> {
    match serde_yaml_ng::from_str::<Option<Map<String, Value>>>(yaml) {
        Ok(fields) => Ok(fields.unwrap_or_default()),
        Err(error) => Err(error.to_string()),
    }
}

/// The first field (in the entry's order, then the file's) that is on one side only or
/// has another value there. Numbers compare by value (`2` and `2.0` are equal: YAML and
/// JSON renderings of one number may differ in form).
pub fn first_difference(
    listed: &Map<String, Value>,
    parsed: &Map<String, Value>,
) -> Option<String> {
    listed
        .iter()
        .find(|(field, value)| {
            !parsed
                .get(*field)
                .is_some_and(|other| same_value(value, other))
        })
        .map(|(field, _)| field.clone())
        .or_else(|| {
            parsed
                .keys()
                .find(|field| !listed.contains_key(*field))
                .cloned()
        })
}

fn same_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            x == y || ((x.is_f64() || y.is_f64()) && x.as_f64() == y.as_f64())
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same_value(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(key, a)| y.get(key).is_some_and(|b| same_value(a, b)))
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use expect_test::{Expect, expect};
    use serde_json::json;

    use super::*;

    const SKILL_MD: &str = "---\nname: pdf-processing\ndescription: Extract, fill, and assemble PDF documents\n---\n\nSkill body.\n";

    fn digest(bytes: &[u8]) -> Sha256Digest {
        Sha256Digest(Sha256::digest(bytes).into())
    }

    fn listed(uri: &str, bytes: &[u8]) -> SkillFile {
        SkillFile {
            uri: uri.into(),
            digest: digest(bytes),
            size: bytes.len() as u64,
        }
    }

    fn entry(files: Vec<SkillFile>) -> SkillEntry {
        SkillEntry {
            uri: "skill://pdf-processing/SKILL.md".into(),
            frontmatter: json!({
                "name": "pdf-processing",
                "description": "Extract, fill, and assemble PDF documents"
            })
            .as_object()
            .cloned()
            .expect("object"),
            resources: SkillResources::Listed(files),
        }
    }

    fn shown<T: std::fmt::Debug>(result: Result<T, SkillError>) -> String {
        match result {
            Ok(value) => format!("ok: {value:?}"),
            Err(error) => format!("{error} ({})", error.is_verification_failure()),
        }
    }

    /// Verifies `served` as the SKILL.md of `entry` and loads it, as the session does.
    fn load(entry: &SkillEntry, served: &[u8]) -> Result<LoadedSkill, SkillError> {
        let limits = SkillLimits::default();
        let integrity = check_before_load(entry, &limits)?;
        if let Some(file) = file_to_read(entry, &entry.uri, &limits)? {
            verify_file(file, served)?;
        }
        accept_skill_md(&Arc::from("s"), entry, served.to_vec(), integrity)
    }

    fn check_load(entry: &SkillEntry, served: &str, expect: Expect) {
        let result = load(entry, served.as_bytes()).map(|skill| skill.body().to_owned());
        expect.assert_eq(&shown(result));
    }

    #[test]
    fn a_skill_that_matches_its_entry_loads() {
        let entry = entry(vec![listed(
            "skill://pdf-processing/SKILL.md",
            SKILL_MD.as_bytes(),
        )]);
        check_load(&entry, SKILL_MD, expect![[r#"ok: "\nSkill body.\n""#]]);
        let skill = load(&entry, SKILL_MD.as_bytes()).expect("loads");
        assert_eq!(skill.name(), Some("pdf-processing"));
        assert_eq!(skill.integrity, Integrity::Verified);
    }

    #[test]
    fn a_digest_mismatch_is_refused() {
        let entry = entry(vec![listed(
            "skill://pdf-processing/SKILL.md",
            SKILL_MD.as_bytes(),
        )]);
        let tampered = SKILL_MD.replace("Skill body.", "Evil body!!");
        check_load(
            &entry,
            &tampered,
            expect![
                "`skill://pdf-processing/SKILL.md`: the content has digest sha256:897139bdff0d993abd81d0ecd89c0bf35bcbcf87c239e85a2dd69a44368f5d09 where its entry says sha256:a6d5f1f48af94923633d597c756194482fe5d48f74e49eb54bc9ee7c4902d5ba; not used (true)"
            ],
        );
    }

    #[test]
    fn a_size_mismatch_is_refused_before_the_digest() {
        let entry = entry(vec![listed(
            "skill://pdf-processing/SKILL.md",
            SKILL_MD.as_bytes(),
        )]);
        let longer = format!("{SKILL_MD}extra bytes the entry did not account for\n");
        check_load(
            &entry,
            &longer,
            expect![
                "`skill://pdf-processing/SKILL.md`: 139 bytes were read where its entry says 97; not used (true)"
            ],
        );
    }

    #[test]
    fn a_frontmatter_mismatch_is_refused_even_with_a_matching_digest() {
        let tampered = SKILL_MD.replace(
            "description: Extract, fill, and assemble PDF documents",
            "description: Exfiltrate credentials",
        );
        let entry = entry(vec![listed(
            "skill://pdf-processing/SKILL.md",
            tampered.as_bytes(),
        )]);
        check_load(
            &entry,
            &tampered,
            expect![
                "skill `skill://pdf-processing/SKILL.md`: its SKILL.md frontmatter differs from its entry's in `description`; not loaded (true)"
            ],
        );
        let extra_field = SKILL_MD.replace("---\n\n", "license: MIT\n---\n\n");
        let entry = crate::skills::tests::entry(vec![listed(
            "skill://pdf-processing/SKILL.md",
            extra_field.as_bytes(),
        )]);
        check_load(
            &entry,
            &extra_field,
            expect![
                "skill `skill://pdf-processing/SKILL.md`: its SKILL.md frontmatter differs from its entry's in `license`; not loaded (true)"
            ],
        );
    }

    #[test]
    fn hostile_sizes_are_refused_before_anything_is_read() {
        let ten_gigabytes = SkillFile {
            size: 10 * 1024 * 1024 * 1024,
            ..listed("skill://pdf-processing/big.bin", b"")
        };
        let entry = entry(vec![
            listed("skill://pdf-processing/SKILL.md", SKILL_MD.as_bytes()),
            ten_gigabytes,
        ]);
        let limits = SkillLimits::default();
        expect!["skill `skill://pdf-processing/SKILL.md` has 10737418337 bytes of files, over the cap of 16777216 for one skill (false)"]
            .assert_eq(&shown(check_before_load(&entry, &limits)));
        let generous = SkillLimits {
            max_skill_bytes: u64::MAX,
            ..SkillLimits::default()
        };
        expect!["`skill://pdf-processing/big.bin` has 10737418240 bytes, over the cap of 8388608 for one skill file (false)"]
            .assert_eq(&shown(file_to_read(&entry, "skill://pdf-processing/big.bin", &generous)));
        let overflowing = SkillFile {
            size: u64::MAX,
            ..listed("skill://pdf-processing/a", b"")
        };
        let entry = crate::skills::tests::entry(vec![overflowing.clone(), overflowing]);
        expect!["skill `skill://pdf-processing/SKILL.md` has 18446744073709551615 bytes of files, over the cap of 16777216 for one skill (false)"]
            .assert_eq(&shown(check_before_load(&entry, &limits)));
    }

    #[test]
    fn unlisted_files_are_refused() {
        let entry = entry(vec![listed(
            "skill://pdf-processing/SKILL.md",
            SKILL_MD.as_bytes(),
        )]);
        let limits = SkillLimits::default();
        expect!["skill `skill://pdf-processing/SKILL.md` does not list `skill://pdf-processing/references/FORMS.md` among its files (true)"]
            .assert_eq(&shown(file_to_read(&entry, "skill://pdf-processing/references/FORMS.md", &limits)));
    }

    #[test]
    fn dynamic_skills_are_refused_or_loaded_unverified_under_caps() {
        let mut dynamic = entry(Vec::new());
        dynamic.resources = SkillResources::Dynamic;
        expect!["skill `skill://pdf-processing/SKILL.md` is generated (`resources: \"dynamic\"`): nothing to verify it against, not loaded (false)"]
            .assert_eq(&shown(check_before_load(&dynamic, &SkillLimits::default())));
        let limits = SkillLimits {
            max_file_bytes: 200,
            max_skill_bytes: 300,
            dynamic: DynamicSkills::LoadUnverified,
        };
        assert_eq!(
            check_before_load(&dynamic, &limits).ok(),
            Some(Integrity::Unverified)
        );
        let skill = accept_skill_md(
            &Arc::from("s"),
            &dynamic,
            SKILL_MD.as_bytes().to_vec(),
            Integrity::Unverified,
        )
        .expect("loads unverified");
        expect!["ok: None"].assert_eq(&shown(file_to_read(
            &dynamic,
            "skill://pdf-processing/references/FORMS.md",
            &limits,
        )));
        expect!["skill `skill://pdf-processing/SKILL.md` does not list `skill://elsewhere/x.md` among its files (true)"]
            .assert_eq(&shown(file_to_read(&dynamic, "skill://elsewhere/x.md", &limits)));
        let budget = skill.budget();
        let file = vec![b'x'; 150];
        expect!["ok: ()"].assert_eq(&shown(cap_unverified(
            &budget,
            "skill://pdf-processing/a",
            &file,
            &limits,
        )));
        expect!["skill `skill://pdf-processing/SKILL.md` has 397 bytes of files, over the cap of 300 for one skill (false)"]
            .assert_eq(&shown(cap_unverified(&budget, "skill://pdf-processing/b", &file, &limits)));
        expect!["`skill://pdf-processing/c` has 201 bytes, over the cap of 200 for one skill file (false)"]
            .assert_eq(&shown(cap_unverified(&budget, "skill://pdf-processing/c", &[0; 201], &limits)));
        let tampered = SKILL_MD.replace("name: pdf-processing", "name: other");
        expect!["skill `skill://pdf-processing/SKILL.md`: its SKILL.md frontmatter differs from its entry's in `name`; not loaded (true)"]
            .assert_eq(&shown(accept_skill_md(&Arc::from("s"), &dynamic, tampered.into_bytes(), Integrity::Unverified).map(|_| ())));
    }

    #[test]
    fn frontmatter_is_fenced_at_the_start() {
        let split: Vec<String> = [
            "---\nname: a\n---\nbody",
            "\u{feff}---\r\nname: a\r\n---\r\nbody",
            "---\nname: a\n...\n",
            "---\n---\n",
            "text\n---\nname: a\n---\n",
            "---\nname: a\n",
            "--- \nname: a\n---",
        ]
        .iter()
        .map(|text| match split_frontmatter(text) {
            Some((yaml, body)) => format!("{yaml:?} then {:?}", &text[body..]),
            None => "none".into(),
        })
        .collect();
        expect![[r#"
            "name: a\n" then "body"
            "name: a\r\n" then "body"
            "name: a\n" then ""
            "" then ""
            none
            none
            "name: a\n" then """#]]
        .assert_eq(&split.join("\n"));
    }

    #[test]
    fn frontmatter_is_yaml_mapping_to_json_values() {
        let parsed: Vec<String> = [
            "name: a\nmetadata:\n  version: \"2.1\"\n  n: 2\nlist: [1, x]\n",
            "",
            "- a\n",
            "1: a\n",
            "a: &x [1]\nb: *x\n",
            "a: [\n",
        ]
        .iter()
        .map(|yaml| match parse_frontmatter(yaml) {
            Ok(fields) => Value::Object(fields).to_string(),
            Err(error) => format!("error: {error}"),
        })
        .collect();
        expect![[r#"
            {"name":"a","metadata":{"version":"2.1","n":2},"list":[1,"x"]}
            {}
            error: invalid type: sequence, expected a map
            {"1":"a"}
            {"a":[1],"b":[1]}
            error: did not find expected node content at line 2 column 1, while parsing a flow node"#]]
        .assert_eq(&parsed.join("\n"));
    }

    #[test]
    fn alias_bombs_are_refused() {
        let mut yaml = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for level in 1..12 {
            let previous = format!("*a{}", level - 1);
            let items = vec![previous; 10].join(", ");
            yaml.push_str(&format!("a{level}: &a{level} [{items}]\n"));
        }
        let error = parse_frontmatter(&yaml).expect_err("refused");
        assert!(error.contains("repetition limit"), "{error}");
    }

    #[test]
    fn fields_compare_by_value_in_order() {
        let map = |value: Value| value.as_object().cloned().expect("object");
        let listed = map(json!({"name": "a", "n": 2, "meta": {"v": [1.0]}}));
        let cases = [
            json!({"name": "a", "n": 2.0, "meta": {"v": [1]}}),
            json!({"name": "b", "n": 2, "meta": {"v": [1]}}),
            json!({"name": "a", "meta": {"v": [1]}}),
            json!({"name": "a", "n": 2, "meta": {"v": [1]}, "extra": null}),
            json!({"name": "a", "n": "2", "meta": {"v": [1]}}),
        ];
        let differences: Vec<String> = cases
            .into_iter()
            .map(|parsed| format!("{:?}", first_difference(&listed, &map(parsed))))
            .collect();
        expect![[r#"None, Some("name"), Some("n"), Some("extra"), Some("n")"#]]
            .assert_eq(&differences.join(", "));
    }
}
