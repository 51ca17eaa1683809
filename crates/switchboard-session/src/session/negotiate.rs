//! Era detection and the handshake: the `server/discover` probe, `initialize`, and the
//! fallbacks between them.

use super::*;

// ---------------------------------------------------------------------------------------
// Negotiation

pub(super) async fn negotiate(
    wiring: &Wiring,
    config: &SessionConfig,
) -> Result<Negotiated, SessionError> {
    let pinned = config.protocol_version.as_deref();
    let pinned_era = match pinned {
        None => None,
        Some(version) => match Era::of_version(version) {
            Some(era) => Some(era),
            None => {
                return Err(SessionError::VersionMismatch {
                    server: wiring.server.clone(),
                    offered: format!(
                        "(not asked: the configuration pins unknown version {version})"
                    ),
                    supported: switchboard_protocol::supported_versions().join(", "),
                });
            }
        },
    };
    let era = match (config.era, pinned_era) {
        (EraChoice::Legacy, Some(Era::Modern)) | (EraChoice::Modern, Some(Era::Legacy)) => {
            return Err(SessionError::VersionMismatch {
                server: wiring.server.clone(),
                offered: format!(
                    "(not asked: pinned version {} contradicts the pinned era)",
                    pinned.unwrap_or("")
                ),
                supported: switchboard_protocol::supported_versions().join(", "),
            });
        }
        (EraChoice::Legacy | EraChoice::Modern, Some(era)) => Some(era),
        (EraChoice::Legacy, None) => Some(Era::Legacy),
        (EraChoice::Modern, None) => Some(Era::Modern),
        (EraChoice::Auto | EraChoice::AutoLegacyFirst, pinned) => pinned,
    };
    match era {
        Some(Era::Legacy) => initialize(wiring, config, pinned).await,
        Some(Era::Modern) => {
            let version = pinned.unwrap_or(MODERN_VERSION);
            match discover(wiring, config, version, Refusals::default()).await? {
                DiscoverOutcome::Modern(negotiated) => Ok(*negotiated),
                DiscoverOutcome::NotModern(detail) => Err(SessionError::Protocol {
                    server: wiring.server.clone(),
                    method: methods::SERVER_DISCOVER.into(),
                    detail: format!(
                        "the server does not speak the 2026-07-28 protocol ({detail}); set `era` to `auto` or `legacy`"
                    ),
                }),
                DiscoverOutcome::Refused(refused) => Err(refused.into_error(&wiring.server)),
            }
        }
        None if config.era == EraChoice::AutoLegacyFirst => {
            initialize_then_probe(wiring, config).await
        }
        None => probe_then_initialize(wiring, config).await,
    }
}

/// [`EraChoice::AutoLegacyFirst`]: `initialize`; when the server answers it with an error,
/// an answer that is no `InitializeResult`, or a version the client does not speak, the
/// `Auto` probe as if nothing had been sent. A closed connection or the connect deadline
/// stays the error.
pub(super) async fn initialize_then_probe(
    wiring: &Wiring,
    config: &SessionConfig,
) -> Result<Negotiated, SessionError> {
    match initialize(wiring, config, None).await {
        Ok(negotiated) => Ok(negotiated),
        Err(
            error @ (SessionError::Rpc { .. }
            | SessionError::Protocol { .. }
            | SessionError::VersionMismatch { .. }),
        ) => {
            tracing::debug!(server = %wiring.server, %error, "initialize first failed; probing with server/discover");
            probe_then_initialize(wiring, config).await
        }
        Err(error) if is_no_modern_answer(&error) => {
            tracing::debug!(server = %wiring.server, %error, "unreadable answer to initialize; probing with server/discover");
            probe_then_initialize(wiring, config).await
        }
        Err(error) => Err(error),
    }
}

pub(super) enum DiscoverOutcome {
    Modern(Box<Negotiated>),
    NotModern(String),
    /// Every version offered was refused with -32022, though the server lists one of them.
    Refused(Refusals),
}

/// `server/discover` attempts that each ended in -32022.
#[derive(Debug, Default)]
pub(super) struct Refusals {
    /// The versions offered, each once, in order.
    pub(super) offered: Vec<String>,
    /// How many times `server/discover` was sent.
    pub(super) attempts: usize,
    /// What the last refusal listed as supported.
    pub(super) listed: String,
}

impl Refusals {
    pub(super) fn refused(&mut self, version: &str, listed: String) {
        if !self.offered.iter().any(|v| v == version) {
            self.offered.push(version.to_owned());
        }
        self.attempts += 1;
        self.listed = listed;
    }

    pub(super) fn into_error(self, server: &Arc<str>) -> SessionError {
        SessionError::VersionRefused {
            server: server.clone(),
            offered: self.offered,
            attempts: self.attempts,
            listed: self.listed,
        }
    }
}

/// How many times `server/discover` is sent with a version the server lists, after a
/// refusal (-32022) of the version before.
pub(super) const DISCOVER_ATTEMPTS: usize = 2;

/// Sends `server/discover`, retrying on -32022 with a version from `data.supported`, at
/// most [`DISCOVER_ATTEMPTS`] times in all; `refusals` holds the attempts refused before.
pub(super) async fn discover(
    wiring: &Wiring,
    config: &SessionConfig,
    version: &str,
    mut refusals: Refusals,
) -> Result<DiscoverOutcome, SessionError> {
    let mut version = version.to_owned();
    for _attempt in 0..DISCOVER_ATTEMPTS {
        let call = send_discover(wiring, config, &version).await?;
        match answer_of(wiring, call, methods::SERVER_DISCOVER).await? {
            Ok(result) => return Ok(discover_result(wiring, result, &version)),
            Err(error) => match modern_retry_version(&error) {
                RetryVersion::Retry {
                    version: next,
                    listed,
                } => {
                    refusals.refused(&version, listed);
                    version = next;
                }
                RetryVersion::OnlyLegacy(offered) => {
                    return Ok(DiscoverOutcome::NotModern(offered));
                }
                RetryVersion::NotRecognised => {
                    return Ok(DiscoverOutcome::NotModern(format!(
                        "it answered `server/discover` with: {error}"
                    )));
                }
            },
        }
    }
    Ok(DiscoverOutcome::Refused(refusals))
}

pub(super) enum RetryVersion {
    /// Offer this version next; `listed` is what the server said it supports.
    Retry {
        version: String,
        listed: String,
    },
    OnlyLegacy(String),
    NotRecognised,
}

pub(super) fn modern_retry_version(error: &ErrorObject) -> RetryVersion {
    if error.code != error_codes::UNSUPPORTED_PROTOCOL_VERSION {
        return RetryVersion::NotRecognised;
    }
    let supported: Vec<&str> = error
        .data
        .as_ref()
        .and_then(|d| d.get("supported"))
        .and_then(Value::as_array)
        .map(|list| list.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    match MODERN_VERSIONS.iter().find(|v| supported.contains(v)) {
        Some(version) => RetryVersion::Retry {
            version: (*version).to_owned(),
            listed: supported.join(", "),
        },
        None => RetryVersion::OnlyLegacy(format!("it supports only {}", supported.join(", "))),
    }
}

pub(super) async fn send_discover(
    wiring: &Wiring,
    config: &SessionConfig,
    version: &str,
) -> Result<PendingCall, SessionError> {
    let params = add_meta(
        json!({}),
        Era::Modern,
        &MetaFields {
            version,
            client_capabilities: &wiring.client_capabilities,
            client_info: &config.client_info,
        },
        None,
    );
    let id = wiring.connection.allocate_id();
    let context = MessageContext::version(&Arc::from(version));
    wiring
        .connection
        .send_request_in(&context, id, methods::SERVER_DISCOVER, Some(&params))
        .await
        .map_err(|e| SessionError::from_wire(&wiring.server, methods::SERVER_DISCOVER, e))
}

pub(super) async fn answer_of(
    wiring: &Wiring,
    mut call: PendingCall,
    method: &str,
) -> Result<Result<Value, ErrorObject>, SessionError> {
    call.response()
        .await
        .map_err(|e| SessionError::from_wire(&wiring.server, method, e))
}

pub(super) fn discover_result(wiring: &Wiring, result: Value, version: &str) -> DiscoverOutcome {
    let parsed: DiscoverResult = match serde_json::from_value(result) {
        Ok(parsed) => parsed,
        Err(e) => {
            return DiscoverOutcome::NotModern(format!(
                "its `server/discover` result is not a DiscoverResult: {e}"
            ));
        }
    };
    let chosen = if parsed.supported_versions.iter().any(|v| v == version) {
        Some(version.to_owned())
    } else {
        MODERN_VERSIONS
            .iter()
            .find(|v| parsed.supported_versions.iter().any(|s| s == *v))
            .map(|v| (*v).to_owned())
    };
    let Some(protocol_version) = chosen else {
        return DiscoverOutcome::NotModern(format!(
            "it lists versions {}",
            parsed.supported_versions.join(", ")
        ));
    };
    let server_info = parsed
        .meta
        .as_ref()
        .and_then(|m| m.get(meta::SERVER_INFO))
        .and_then(|info| serde_json::from_value(info.clone()).ok());
    tracing::debug!(server = %wiring.server, "server/discover answered: modern era");
    DiscoverOutcome::Modern(Box::new(Negotiated {
        era: Era::Modern,
        protocol_version,
        capabilities: parsed.capabilities,
        server_info,
        instructions: parsed.instructions,
    }))
}

/// Auto mode: probe with `server/discover`; on any non-modern answer run `initialize`. If
/// the probe is silent past `probe_timeout`, `initialize` is sent too and the first usable
/// answer decides.
pub(super) async fn probe_then_initialize(
    wiring: &Wiring,
    config: &SessionConfig,
) -> Result<Negotiated, SessionError> {
    let probe = send_discover(wiring, config, MODERN_VERSION).await?;
    let probe_answer = answer_of(wiring, probe, methods::SERVER_DISCOVER);
    tokio::pin!(probe_answer);
    let early = tokio::time::timeout(config.probe_timeout, &mut probe_answer).await;
    match early {
        Ok(answer) => {
            let answer = match answer {
                // A legacy server's sloppy "method not found" (an unreadable answer, an HTTP
                // refusal of the probe) is no reason to stop.
                Err(error) if is_no_modern_answer(&error) => {
                    tracing::debug!(server = %wiring.server, %error, "unreadable answer to server/discover");
                    return initialize(wiring, config, None).await;
                }
                answer => answer?,
            };
            match answer {
                Ok(result) => match discover_result(wiring, result, MODERN_VERSION) {
                    DiscoverOutcome::Modern(negotiated) => Ok(*negotiated),
                    DiscoverOutcome::NotModern(_) | DiscoverOutcome::Refused(_) => {
                        initialize(wiring, config, None).await
                    }
                },
                Err(error) => match modern_retry_version(&error) {
                    RetryVersion::Retry { version, listed } => {
                        let mut refusals = Refusals::default();
                        refusals.refused(MODERN_VERSION, listed);
                        match discover(wiring, config, &version, refusals).await? {
                            DiscoverOutcome::Modern(negotiated) => Ok(*negotiated),
                            DiscoverOutcome::NotModern(_) => initialize(wiring, config, None).await,
                            DiscoverOutcome::Refused(refusals) => {
                                initialize_after_refusals(wiring, config, refusals).await
                            }
                        }
                    }
                    _ => initialize(wiring, config, None).await,
                },
            }
        }
        Err(_) => {
            tracing::debug!(server = %wiring.server, "no answer to server/discover yet; sending initialize too");
            let init = initialize(wiring, config, None);
            tokio::pin!(init);
            tokio::select! {
                result = &mut init => match result {
                    Ok(negotiated) => Ok(negotiated),
                    // A server that already took the probe as a modern request may refuse
                    // `initialize`; its answer to the probe is then the one that counts. The
                    // wait for it is one more probe period.
                    Err(init_error) => match tokio::time::timeout(config.probe_timeout, probe_answer).await {
                        Ok(Ok(Ok(result))) => match discover_result(wiring, result, MODERN_VERSION) {
                            DiscoverOutcome::Modern(negotiated) => Ok(*negotiated),
                            DiscoverOutcome::NotModern(_) | DiscoverOutcome::Refused(_) => Err(init_error),
                        },
                        _ => Err(init_error),
                    },
                },
                answer = &mut probe_answer => match answer {
                    Ok(Ok(result)) => match discover_result(wiring, result, MODERN_VERSION) {
                        DiscoverOutcome::Modern(negotiated) => Ok(*negotiated),
                        DiscoverOutcome::NotModern(_) | DiscoverOutcome::Refused(_) => init.await,
                    },
                    Ok(Err(_)) => init.await,
                    Err(error) if is_no_modern_answer(&error) => init.await,
                    Err(error) => Err(error),
                },
            }
        }
    }
}

/// A failed `server/discover` probe that only says the server is not modern: its answer
/// could not be read, or the transport got none (a legacy HTTP server refusing the POST).
pub(super) fn is_no_modern_answer(error: &SessionError) -> bool {
    error.is_bad_answer() || error.transport_error().is_some()
}

/// `initialize` once every modern version was refused: a server that speaks the legacy
/// protocol too is still used; for one that does not, the refusals are the error that says
/// why (not that it does not know `initialize`). A closed connection stays that error.
pub(super) async fn initialize_after_refusals(
    wiring: &Wiring,
    config: &SessionConfig,
    refusals: Refusals,
) -> Result<Negotiated, SessionError> {
    match initialize(wiring, config, None).await {
        Ok(negotiated) => Ok(negotiated),
        Err(error) if error.is_closed() => Err(error),
        Err(error) => {
            tracing::debug!(server = %wiring.server, %error, "initialize after every version was refused");
            Err(refusals.into_error(&wiring.server))
        }
    }
}

/// The legacy handshake. `initialize` is never cancelled.
pub(super) async fn initialize(
    wiring: &Wiring,
    config: &SessionConfig,
    pinned: Option<&str>,
) -> Result<Negotiated, SessionError> {
    let server = &wiring.server;
    let proposed = pinned.unwrap_or(LATEST_LEGACY_VERSION);
    let params = json!({
        "protocolVersion": proposed,
        "capabilities": wiring.client_capabilities,
        "clientInfo": config.client_info,
    });
    let id = wiring.connection.allocate_id();
    let call = wiring
        .connection
        .send_request(id, methods::INITIALIZE, Some(&params))
        .await
        .map_err(|e| SessionError::from_wire(server, methods::INITIALIZE, e))?;
    let result = match answer_of(wiring, call, methods::INITIALIZE).await? {
        Ok(result) => result,
        Err(error) => {
            return Err(SessionError::Rpc {
                server: server.clone(),
                method: methods::INITIALIZE.into(),
                error,
            });
        }
    };
    let protocol_error = |detail: String| SessionError::Protocol {
        server: server.clone(),
        method: methods::INITIALIZE.into(),
        detail,
    };
    let version = match result.get("protocolVersion") {
        Some(Value::String(version)) => version.clone(),
        Some(other) => {
            return Err(protocol_error(format!(
                "`protocolVersion` is not a string: {other}"
            )));
        }
        None => return Err(protocol_error("the result has no `protocolVersion`".into())),
    };
    let acceptable = match pinned {
        Some(pinned) => version == pinned,
        None => LEGACY_VERSIONS.contains(&version.as_str()),
    };
    if !acceptable {
        return Err(SessionError::VersionMismatch {
            server: server.clone(),
            offered: version,
            supported: match pinned {
                Some(pinned) => format!("{pinned} (pinned in the configuration)"),
                None => LEGACY_VERSIONS.join(", "),
            },
        });
    }
    let capabilities = match result.get("capabilities") {
        Some(capabilities) => serde_json::from_value(capabilities.clone())
            .map_err(|e| protocol_error(format!("invalid `capabilities`: {e}")))?,
        None => ServerCapabilities::default(),
    };
    let server_info = result
        .get("serverInfo")
        .and_then(|info| serde_json::from_value(info.clone()).ok());
    let instructions = result
        .get("instructions")
        .and_then(Value::as_str)
        .map(str::to_owned);
    wiring
        .connection
        .notify_in(
            &MessageContext::version(&Arc::from(version.as_str())),
            methods::INITIALIZED,
            None,
        )
        .await
        .map_err(|e| SessionError::from_wire(server, methods::INITIALIZED, e))?;
    Ok(Negotiated {
        era: Era::Legacy,
        protocol_version: version,
        capabilities,
        server_info,
        instructions,
    })
}

/// MCP's cancellation: `notifications/cancelled` naming the request and why.
pub(super) fn cancel_notice(id: &RequestId, reason: &str) -> (&'static str, Value) {
    (
        methods::CANCELLED,
        json!({ "requestId": id, "reason": reason }),
    )
}
