//! The skills extension on a session: `skills/list` under the listing caps, `skills/get`,
//! and loading a skill's files with `resources/read`, each verified before it is returned.

use base64::Engine;
use switchboard_protocol::{SKILLS_EXTENSION, SkillEntry, declares_skills};

use super::requests::Progress;
use super::*;
use crate::skills::{
    Integrity, LoadedSkill, SkillContent, SkillError, accept_skill_md, cap_unverified,
    check_before_load, file_to_read, verify_file,
};

impl Session {
    /// Whether the server declares the skills extension (`io.modelcontextprotocol/skills`).
    pub fn offers_skills(&self) -> bool {
        declares_skills(self.inner.negotiated.capabilities.extensions.as_ref())
    }

    /// Lists the server's skills, following cursors under the listing caps. Reads the
    /// listing only: no skill file is fetched. An entry that cannot be read (a bad digest,
    /// an incomplete file list, …) is a [`Listing::problems`] entry, not a failed listing.
    pub async fn list_skills(&self) -> Result<Listing<SkillEntry>, SessionError> {
        self.require(self.offers_skills(), SKILLS_EXTENSION, methods::SKILLS_LIST)?;
        self.list_all(
            methods::SKILLS_LIST,
            "skills",
            SkillEntry::from_json_text,
            |skill| skill.uri.clone(),
        )
        .await
    }

    /// Gets one skill's entry by its `SKILL.md` URI (`skills/get`), listed or not. Reads
    /// the entry only.
    pub async fn get_skill(&self, uri: &str) -> Result<SkillEntry, SessionError> {
        let method = methods::SKILLS_GET;
        self.require(self.offers_skills(), SKILLS_EXTENSION, method)?;
        let raw = self
            .send_and_wait(
                method,
                BaseParams::Tree(&json!({ "uri": uri })),
                None,
                &CallOptions::default(),
                Progress::ReportOnly,
            )
            .await?;
        #[derive(serde::Deserialize)]
        struct GetResult<'a> {
            #[serde(borrow)]
            skill: &'a RawValue,
        }
        let result: GetResult<'_> = serde_json::from_str(raw.get())
            .map_err(|e| self.protocol(method, format!("the result has no `skill` entry: {e}")))?;
        let entry = SkillEntry::from_json_text(result.skill.get())
            .map_err(|detail| self.protocol(method, detail))?;
        if entry.uri != uri {
            return Err(self.protocol(
                method,
                format!("asked for skill `{uri}`, the answer is for `{}`", entry.uri),
            ));
        }
        Ok(entry)
    }

    /// Loads a skill from its entry: reads its `SKILL.md` (`resources/read`), checks the
    /// bytes against the entry's size and digest before using them, parses the YAML
    /// frontmatter and compares it field by field with the entry's. Refused before any
    /// read when the entry's sizes pass [`SessionConfig::skill_limits`] or the skill is
    /// dynamic and those limits refuse dynamic skills. Nothing of a skill that fails is
    /// returned.
    pub async fn load_skill(&self, entry: &SkillEntry) -> Result<LoadedSkill, SkillError> {
        let limits = &self.inner.config.skill_limits;
        let integrity = check_before_load(entry, limits)?;
        let listed = file_to_read(entry, &entry.uri, limits)?;
        let content = self.read_file_bytes(&entry.uri).await?;
        match listed {
            Some(file) => verify_file(file, &content.bytes)?,
            None => {
                let size = u64::try_from(content.bytes.len()).unwrap_or(u64::MAX);
                if size > limits.max_file_bytes {
                    return Err(SkillError::FileTooLarge {
                        uri: entry.uri.clone(),
                        size,
                        cap: limits.max_file_bytes,
                    });
                }
            }
        }
        accept_skill_md(&self.inner.server, entry, content.bytes, integrity)
    }

    /// Reads one file of a skill loaded from this server: only a file its entry lists (any file inside the
    /// skill's directory, for a dynamic skill), checked against the entry's size and digest
    /// before it is returned (capped, for a dynamic skill).
    pub async fn read_skill_file(
        &self,
        skill: &LoadedSkill,
        uri: &str,
    ) -> Result<SkillContent, SkillError> {
        if skill.server != self.inner.server {
            return Err(SkillError::OtherServer {
                skill: skill.entry.uri.clone(),
                loaded_from: skill.server.to_string(),
                server: self.inner.server.to_string(),
            });
        }
        let limits = &self.inner.config.skill_limits;
        let listed = file_to_read(&skill.entry, uri, limits)?;
        let content = self.read_file_bytes(uri).await?;
        match (listed, skill.integrity) {
            (Some(file), _) => verify_file(file, &content.bytes)?,
            (None, Integrity::Unverified) => {
                cap_unverified(&skill.budget(), uri, &content.bytes, limits)?
            }
            (None, Integrity::Verified) => {
                return Err(SkillError::FileNotListed {
                    skill: skill.entry.uri.clone(),
                    uri: uri.to_owned(),
                });
            }
        }
        Ok(content)
    }

    /// `resources/read` of `uri`: the bytes of the content item for that URI (text as
    /// UTF-8, a blob decoded), unverified. The answer itself is bounded by the frame cap.
    async fn read_file_bytes(&self, uri: &str) -> Result<SkillContent, SkillError> {
        let result = self.read_resource_contents(uri).await?;
        let unusable = |detail: &str| SkillError::UnusableContent {
            uri: uri.to_owned(),
            detail: detail.to_owned(),
        };
        let item = result
            .contents
            .into_iter()
            .find(|item| item.uri == uri)
            .ok_or_else(|| unusable("the result has no content for this URI"))?;
        let bytes = match (item.text, item.blob) {
            (Some(text), None) => text.into_bytes(),
            (None, Some(blob)) => base64::engine::general_purpose::STANDARD
                .decode(blob)
                .map_err(|_| unusable("the content's `blob` is not base64"))?,
            _ => {
                return Err(unusable(
                    "the content has neither `text` nor `blob`, or both",
                ));
            }
        };
        Ok(SkillContent {
            uri: item.uri,
            mime_type: item.mime_type,
            bytes,
        })
    }
}
