//! Helpers the gateway tests share: the stderr of a spawned gateway (now, or once it holds
//! a line, within the deadline), and its listings (tools, resources and templates).

use switchboard_protocol::{Resource, ResourceTemplate, Tool};
use switchboard_session::{Listing, Session};
use switchboard_testkit::wait::{self, TEST_DEADLINE, within};

/// The spawned gateway's stderr so far (its tail); empty when it has no process.
pub(crate) fn stderr_of(session: &Session) -> String {
    session
        .process()
        .map(|p| p.stderr_tail())
        .unwrap_or_default()
}

/// The gateway's stderr once it holds `needle` `times` times (polled within the deadline).
pub(crate) async fn stderr_with(session: &Session, needle: &str, times: usize) -> String {
    wait::until_async(
        &format!("`{needle}` {times}x on stderr"),
        TEST_DEADLINE,
        || async {
            let stderr = stderr_of(session);
            (stderr.matches(needle).count() >= times).then_some(stderr)
        },
    )
    .await
}

/// The session's tools, listed within the deadline.
pub(crate) async fn listed_tools(session: &Session) -> Vec<Tool> {
    within("tools/list", TEST_DEADLINE, session.list_tools())
        .await
        .expect("the tools listed")
        .items
}

/// The names of the session's tools, in the order listed.
pub(crate) async fn tool_names(session: &Session) -> Vec<String> {
    listed_tools(session)
        .await
        .into_iter()
        .map(|tool| tool.name)
        .collect()
}

/// The session's listings of resources and resource templates (each with the problems its
/// pages had), each within the deadline.
pub(crate) async fn listed_resources(
    session: &Session,
) -> (Listing<Resource>, Listing<ResourceTemplate>) {
    let resources = within("resources/list", TEST_DEADLINE, session.list_resources())
        .await
        .expect("the resources listed");
    let templates = within(
        "resources/templates/list",
        TEST_DEADLINE,
        session.list_resource_templates(),
    )
    .await
    .expect("the resource templates listed");
    (resources, templates)
}
