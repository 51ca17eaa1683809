//! `initialize` and `protocol-version`: judged from the handshake the session performed.

use switchboard_protocol::{Era, LATEST_LEGACY_VERSION, LEGACY_VERSIONS, MODERN_VERSIONS};
use switchboard_session::SessionError;

use crate::catalog::{Transport, ids};
use crate::probe::{Probe, StartError, StartFailure};
use crate::report::{CheckResult, Evidence, Finding};

fn transcript_notes(lines: Vec<String>) -> Vec<String> {
    lines.into_iter().take(8).collect()
}

/// Both handshake checks for a server that initialized.
pub(crate) fn judge_ready(probe: &Probe) -> Vec<CheckResult> {
    let negotiated = probe.session.negotiated();
    let mut evidence = Evidence {
        notes: transcript_notes(probe.recorder.transcript()),
        ..Evidence::default()
    };
    let how = match probe.transport() {
        Transport::Stdio => "spawned",
        Transport::Http => "connected",
    };
    evidence.notes.insert(
        0,
        format!(
            "{how} and initialized in {} ms",
            probe.connect_elapsed.as_millis()
        ),
    );
    let mut findings = Vec::new();
    if negotiated.era == Era::Legacy && negotiated.server_info.is_none() {
        findings.push(Finding::error(
            "the `initialize` result has no valid `serverInfo` (`name` and `version` are required)",
        ));
    }
    let summary = format!(
        "handshake answered in {} ms ({} era, protocol {})",
        probe.connect_elapsed.as_millis(),
        negotiated.era,
        negotiated.protocol_version
    );
    let initialize = CheckResult::from_findings(ids::INITIALIZE, &findings, summary, evidence);

    let version = &negotiated.protocol_version;
    let mut findings = Vec::new();
    let known = match negotiated.era {
        Era::Legacy => LEGACY_VERSIONS.contains(&version.as_str()),
        Era::Modern => MODERN_VERSIONS.contains(&version.as_str()),
    };
    if !known {
        findings.push(Finding::error(format!(
            "the server answered with protocol version {version}, which no published revision defines"
        )));
    }
    let mut evidence = Evidence::default();
    let summary = match negotiated.era {
        Era::Legacy if version == LATEST_LEGACY_VERSION => {
            format!("legacy era: asked for {LATEST_LEGACY_VERSION}, the server agreed")
        }
        Era::Legacy => {
            evidence.notes.push(format!(
                "the client asked for {LATEST_LEGACY_VERSION}; the server offered {version}, which it may do when it does not support the newer one"
            ));
            format!("legacy era: asked for {LATEST_LEGACY_VERSION}, the server offered {version}")
        }
        Era::Modern => format!("modern era: `server/discover` lists {version}"),
    };
    let protocol = CheckResult::from_findings(ids::PROTOCOL_VERSION, &findings, summary, evidence);
    vec![initialize, protocol]
}

/// Both handshake checks for a server that did not initialize.
pub(crate) fn judge_failed(failure: &StartFailure, transport: Transport) -> Vec<CheckResult> {
    let mut evidence = Evidence {
        stderr_tail: failure.stderr_tail.clone().filter(|t| !t.trim().is_empty()),
        ..Evidence::default()
    };
    if let Some(recorder) = &failure.recorder {
        evidence.notes = transcript_notes(recorder.transcript());
    }
    if let Some(status) = &failure.exit_status {
        evidence
            .notes
            .insert(0, format!("the process exited: {status}"));
    }
    let error_line = failure.error.to_string();
    let error_line = error_line.lines().next().unwrap_or("").to_owned();
    if let StartError::Session(SessionError::VersionMismatch { offered, .. }) = &failure.error {
        let initialize = CheckResult::pass(
            ids::INITIALIZE,
            format!(
                "the server answered the handshake in {} ms (but see protocol-version)",
                failure.elapsed.as_millis()
            ),
            Evidence::default(),
        );
        let protocol = CheckResult::finding(
            ids::PROTOCOL_VERSION,
            format!(
                "asked for {LATEST_LEGACY_VERSION}, the server answered with {offered}, which no published revision defines"
            ),
            evidence,
        );
        return vec![initialize, protocol];
    }
    let summary = match (&failure.error, transport) {
        (StartError::Spawn(_), Transport::Stdio) => {
            format!("the server could not be started: {error_line}")
        }
        (StartError::Spawn(_), Transport::Http) => format!("could not connect: {error_line}"),
        (StartError::Session(SessionError::Timeout { after, .. }), _) => {
            format!("no answer to the handshake within {} ms", after.as_millis())
        }
        (StartError::Session(SessionError::Closed { .. }), Transport::Stdio) => {
            format!("the server exited during the handshake: {error_line}")
        }
        (StartError::Session(SessionError::Closed { .. }), Transport::Http) => {
            format!("the connection closed during the handshake: {error_line}")
        }
        (StartError::Session(_), _) => format!("the handshake failed: {error_line}"),
    };
    evidence.notes.push(format!("error: {error_line}"));
    let mut initialize = CheckResult::finding(ids::INITIALIZE, summary, evidence);
    // Nothing answered at the address: no fault of the server's to fix, it is not running.
    if let StartError::Session(SessionError::Closed { reason, .. }) = &failure.error
        && let Some(address) = &reason.unreachable
    {
        initialize.summary = format!("nothing answers at {address}: {error_line}");
        initialize.fix = Some(
            "Start the server (or correct the entry's `url`), then check again: no server \
             answered, so none of its behaviour was checked."
                .into(),
        );
    }
    vec![
        initialize,
        CheckResult::skip(
            ids::PROTOCOL_VERSION,
            "the handshake did not complete (see `initialize`)",
        ),
    ]
}
