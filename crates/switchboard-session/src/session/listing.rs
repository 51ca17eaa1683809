//! Listings across pages under their caps (pages, entries, bytes), read entry by entry.

use switchboard_protocol::ShapeError;

use super::requests::Progress;
use super::*;

impl Session {
    /// Follows a listing's pages under its caps (pages, entries, bytes). Each page's
    /// entries are read straight from its JSON text, one at a time, so an entry that cannot
    /// be read is a [`ListingProblem`] and no tree of the whole page is built.
    pub(super) async fn list_all<T>(
        &self,
        method: &str,
        field: &str,
        parse: fn(&str) -> Result<T, ShapeError>,
        key: fn(&T) -> String,
    ) -> Result<Listing<T>, SessionError> {
        let config = &self.inner.config;
        let mut listing = Listing {
            items: Vec::new(),
            problems: Vec::new(),
            pages: 0,
        };
        let mut seen_names = HashSet::new();
        let mut seen_cursors = HashSet::new();
        let mut cursor: Option<String> = None;
        let mut bytes = 0usize;
        loop {
            if listing.pages >= config.max_list_pages {
                return Err(self.too_large(method, ListingCap::Pages, listing.pages + 1));
            }
            let params = match &cursor {
                Some(cursor) => json!({ "cursor": cursor }),
                None => json!({}),
            };
            let raw = self
                .send_and_wait(
                    method,
                    BaseParams::Tree(&params),
                    None,
                    &CallOptions::default(),
                    Progress::ReportOnly,
                )
                .await?;
            listing.pages += 1;
            let page = listing.pages;
            bytes = bytes.saturating_add(raw.get().len());
            if bytes > config.max_list_bytes {
                return Err(self.too_large(method, ListingCap::Bytes, bytes));
            }
            let entries_so_far = listing.items.len() + listing.problems.len();
            let room = config.max_list_items.saturating_sub(entries_so_far);
            let result = ListPage::from_json_text(raw.get(), field, room)
                .map_err(|detail| self.protocol(method, detail))?;
            self.require_complete(method, result.result_type)?;
            let entries = match result.entries {
                PageEntries::Within(entries) => entries,
                PageEntries::Over { count } => {
                    let seen = entries_so_far.saturating_add(count);
                    return Err(self.too_large(method, ListingCap::Items, seen));
                }
                PageEntries::Missing => {
                    return Err(self.protocol(method, format!("the result has no `{field}` array")));
                }
            };
            for entry in entries {
                match parse(entry.get()) {
                    Ok(item) => {
                        let name = key(&item);
                        if seen_names.insert(name.clone()) {
                            listing.items.push(item);
                        } else {
                            listing.problems.push(ListingProblem {
                                page,
                                detail: format!("duplicate entry `{name}`; the first one is kept"),
                                raw: entry.to_owned(),
                            });
                        }
                    }
                    Err(detail) => listing.problems.push(ListingProblem {
                        page,
                        detail: detail.to_string(),
                        raw: entry.to_owned(),
                    }),
                }
            }
            match result.next_cursor {
                NextCursor::End => return Ok(listing),
                NextCursor::Next(next) => {
                    if !seen_cursors.insert(next.clone()) {
                        return Err(self.protocol(
                            method,
                            format!("pagination loop: cursor {next:?} was returned twice"),
                        ));
                    }
                    cursor = Some(next);
                }
                NextCursor::NotAString(other) => {
                    return Err(self.protocol(
                        method,
                        format!("`nextCursor` is not a string: {}", other.get()),
                    ));
                }
            }
        }
    }

    pub(super) fn too_large(&self, method: &str, cap: ListingCap, seen: usize) -> SessionError {
        let config = &self.inner.config;
        let limit = match cap {
            ListingCap::Pages => config.max_list_pages,
            ListingCap::Items => config.max_list_items,
            ListingCap::Bytes => config.max_list_bytes,
        };
        SessionError::ListingTooLarge {
            server: self.inner.server.clone(),
            method: method.to_owned(),
            cap,
            limit,
            seen,
        }
    }
}
