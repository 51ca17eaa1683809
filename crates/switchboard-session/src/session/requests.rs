//! One request under its deadlines (idle, extended by progress for tool calls; the
//! ceiling; cancellation), and the input rounds of `input_required` answers.

use std::borrow::Cow;

use switchboard_protocol::ShapeError;
use switchboard_wire::TransportError;

use super::*;

/// One request as [`Session::send_and_wait`] was asked to send it.
#[derive(Clone, Copy)]
struct OneRequest<'a> {
    method: &'a str,
    base: BaseParams<'a>,
    input: Option<&'a InputRound>,
    options: &'a CallOptions,
    progress: Progress,
}

/// What a request does with the server's progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Progress {
    /// Always asks for it, and each notice extends the idle deadline (up to the ceiling):
    /// tool calls, which may run long while reporting.
    KeepsAlive,
    /// Asks for it only when the caller has a sink for it; the deadline stays fixed.
    ReportOnly,
}

impl Session {
    /// A request that may answer `input_required` (tools/call, prompts/get, resources/read):
    /// fulfils input requests and retries with a new id, up to the round cap. `read` turns
    /// the result's JSON text into its `resultType` and the caller's type.
    pub(super) async fn request_with_input<T>(
        &self,
        method: &str,
        base: BaseParams<'_>,
        options: &CallOptions,
        progress: Progress,
        read: impl Fn(&RawValue) -> (ResultType, Result<T, ShapeError>),
    ) -> Result<T, SessionError> {
        let mut input: Option<InputRound> = None;
        for _round in 0..=self.inner.config.max_input_rounds {
            let raw = self
                .send_and_wait(method, base, input.as_ref(), options, progress)
                .await?;
            let (kind, result) = read(&raw);
            match kind {
                ResultType::Complete => {
                    return result.map_err(|detail| self.protocol(method, detail));
                }
                ResultType::Other(other) => {
                    return Err(self.protocol(method, format!("unknown `resultType` \"{other}\"")));
                }
                ResultType::InputRequired => {
                    if self.inner.negotiated.era != Era::Modern {
                        return Err(
                            self.protocol(method, "`input_required` from a legacy-era server")
                        );
                    }
                    let tree = read_tree(&raw)
                        .1
                        .map_err(|detail| self.protocol(method, detail))?;
                    input = Some(self.fulfil_input(method, &tree).await?);
                }
            }
        }
        Err(self.protocol(
            method,
            format!(
                "the server still wanted input after {} rounds",
                self.inner.config.max_input_rounds
            ),
        ))
    }

    pub(super) async fn fulfil_input(
        &self,
        method: &str,
        result: &Value,
    ) -> Result<InputRound, SessionError> {
        let requests = result.get("inputRequests");
        let state = result.get("requestState").cloned();
        if requests.is_none() && state.is_none() {
            return Err(self.protocol(
                method,
                "`input_required` without `inputRequests` or `requestState`",
            ));
        }
        if let Some(state) = &state
            && !state.is_string()
        {
            return Err(self.protocol(method, "`requestState` is not a string"));
        }
        let mut responses = Map::new();
        if let Some(requests) = requests {
            let requests = requests
                .as_object()
                .ok_or_else(|| self.protocol(method, "`inputRequests` is not an object"))?;
            let handler = &self.inner.config.handler;
            for (key, request) in requests {
                let input_method = request.get("method").and_then(Value::as_str).unwrap_or("");
                let input_params = request.get("params").cloned().unwrap_or(Value::Null);
                let response = match input_method {
                    methods::ELICITATION_CREATE if handler.supports_elicitation() => {
                        handler.elicit(&self.inner.server, input_params).await
                    }
                    methods::SAMPLING_CREATE_MESSAGE if handler.supports_sampling() => {
                        handler.sample(&self.inner.server, input_params).await
                    }
                    methods::ROOTS_LIST => match handler.roots() {
                        Some(roots) => Ok(json!({ "roots": roots })),
                        None => Err(ErrorObject::new(
                            codes::METHOD_NOT_FOUND,
                            "it did not declare the capability",
                        )),
                    },
                    _ => Err(ErrorObject::new(
                        codes::METHOD_NOT_FOUND,
                        "it did not declare the capability",
                    )),
                };
                match response {
                    Ok(value) => {
                        responses.insert(key.clone(), value);
                    }
                    Err(error) => {
                        return Err(self.protocol(
                            method,
                            format!(
                                "the server asked for `{input_method}` input, which this client \
                                 could not give: {}",
                                switchboard_text::peer_text::PeerText(&error.message)
                            ),
                        ));
                    }
                }
            }
        }
        Ok(InputRound {
            responses: Value::Object(responses),
            state,
        })
    }

    /// Sends one request (with the era's `_meta` envelope) and waits for its answer under the
    /// deadlines, forwarding progress. A request whose response stream was lost before its
    /// answer (such streams cannot be resumed; the server may have restarted) is sent once
    /// more under a new id when that is safe ([`CallOptions::repeatable`]), else it fails
    /// as [`SessionError::Restarted`]; a `tools/call` whose headers the server refused (the tool's `Mcp-Param-*`
    /// headers may have changed) lists the tools again and is sent once more, and a refusal
    /// that stands is the server's JSON-RPC answer.
    pub(super) async fn send_and_wait(
        &self,
        method: &str,
        base: BaseParams<'_>,
        input: Option<&InputRound>,
        options: &CallOptions,
        progress: Progress,
    ) -> Result<Box<RawValue>, SessionError> {
        let request = OneRequest {
            method,
            base,
            input,
            options,
            progress,
        };
        let mut outcome = self.send_once(request).await;
        if transport_failed(&outcome, TransportError::is_interrupted) {
            if !options.repeatable.allows(method) {
                return outcome.map_err(|error| error.as_restarted(method));
            }
            tracing::debug!(server = %self.inner.server, %method, "answer lost to an interruption; sending again");
            let resent = self.send_once(request).await;
            // A resend that reached no server (it is not back yet) leaves the
            // interruption as what happened, for a caller that can wait for the server.
            if !resent
                .as_ref()
                .is_err_and(SessionError::never_reached_the_server)
            {
                outcome = resent;
            }
        }
        if method == methods::TOOLS_CALL
            && transport_failed(&outcome, TransportError::is_header_mismatch)
            && self.relist_tools().await
        {
            outcome = self.send_once(request).await;
        }
        outcome.map_err(SessionError::header_refusal_as_answer)
    }

    /// What the transport is told about a request: the version, and the headers that
    /// mirror its content when the transport sends them.
    fn context_for(&self, method: &str, base: BaseParams<'_>) -> Cow<'_, MessageContext> {
        let inner = &*self.inner;
        match &inner.content_headers {
            Some(content_headers) => Cow::Owned(
                inner
                    .context
                    .clone()
                    .with_headers(content_headers.for_request(method, base)),
            ),
            None => Cow::Borrowed(&inner.context),
        }
    }

    /// Lists the tools again to learn their header parameters; false when that failed
    /// (or the transport sends no headers, so listing cannot help).
    async fn relist_tools(&self) -> bool {
        if self.inner.content_headers.is_none() {
            return false;
        }
        tracing::debug!(server = %self.inner.server, "the server refused a call's headers; listing tools again");
        // Boxed: listing sends requests through `send_and_wait`, which called this.
        Box::pin(self.list_tools()).await.is_ok()
    }

    /// [`Session::send_and_wait`] without its retry.
    async fn send_once(&self, request: OneRequest<'_>) -> Result<Box<RawValue>, SessionError> {
        let OneRequest {
            method,
            base,
            input,
            options,
            progress,
        } = request;
        let inner = &*self.inner;
        let connection = &inner.connection;
        let id = connection.allocate_id();
        let wants_progress = progress == Progress::KeepsAlive || options.progress.is_some();
        let _route = RouteGuard::register(&inner.routes, id.clone(), options);
        let for_client_meta = options
            .for_client
            .as_ref()
            .and_then(|client| inner.meta_prefix.for_client(client));
        let leveled = match &for_client_meta {
            Some(_) => None,
            None => self.leveled_prefix(),
        };
        let meta = for_client_meta
            .as_ref()
            .or(leveled.as_deref())
            .unwrap_or(&inner.meta_prefix);
        let traced = options.trace.as_ref().map(|trace| meta.with_trace(trace));
        let params = RequestParams {
            base,
            input,
            meta: traced.as_ref().unwrap_or(meta),
            progress_token: wants_progress.then_some(&id),
        };
        let idle = options.timeout.unwrap_or(inner.config.request_timeout);
        let started = Instant::now();
        let ceiling = started
            + options
                .max_duration
                .unwrap_or(inner.config.max_call_duration)
                .max(idle);
        let mut deadline = (started + idle).min(ceiling);
        let mut context = self.context_for(method, base);
        if let Some(trace) = &options.trace {
            let headers = trace
                .entries()
                .map(|(name, value)| (name.to_owned(), value.to_owned()));
            context = Cow::Owned(context.into_owned().with_headers(headers.collect()));
        }
        let send = connection.send_request_in(&context, id.clone(), method, Some(&params));
        tokio::pin!(send);
        // The session's sweep keeps the deadline: no timer of the call's own.
        let timer = inner.deadlines.register(deadline);
        let mut call = tokio::select! {
            biased;
            sent = &mut send => match sent {
                Ok(call) => call,
                Err(error) => return Err(self.wire_error(method, error)),
            },
            () = timer.passed() => return Err(self.timeout(method, idle)),
        };
        call.cancel_on_drop("request abandoned by the caller");
        let cancelled = async {
            match &options.cancel {
                Some(token) => token.cancelled().await,
                None => std::future::pending().await,
            }
        };
        tokio::pin!(cancelled);
        loop {
            tokio::select! {
                biased;
                outcome = call.response_raw() => {
                    if options.progress.is_some() || options.log_messages.is_some() {
                        // Progress (and log messages) the server sent before its result are
                        // in the inbound stream already: let them reach their sinks before
                        // the sinks go away.
                        inner.routes.flushed(connection.inbound_delivered()).await;
                    }
                    return match outcome {
                        Ok(Ok(result)) => Ok(result),
                        Ok(Err(error)) => Err(SessionError::Rpc { server: inner.server.clone(), method: method.to_owned(), error }),
                        Err(error) => Err(self.wire_error(method, error)),
                    };
                }
                () = timer.passed() => {
                    // Progress extends a tool call's idle deadline, never past the ceiling.
                    if progress == Progress::KeepsAlive
                        && let Some(last) = inner.routes.last_progress(&id)
                        && (last + idle).min(ceiling) > deadline
                    {
                        deadline = (last + idle).min(ceiling);
                        timer.reset(deadline);
                        continue;
                    }
                    let after = deadline - started;
                    let _ = call.cancel(&format!("timed out after {after:?}")).await;
                    return Err(self.timeout(method, after));
                }
                () = &mut cancelled => {
                    let reason = "cancelled by the client".to_owned();
                    let _ = call.cancel(&reason).await;
                    return Err(SessionError::Cancelled { server: inner.server.clone(), method: method.to_owned(), reason });
                }
            }
        }
    }
}

/// Whether the transport failed the request, for the reason `why` tells.
fn transport_failed<T>(
    outcome: &Result<T, SessionError>,
    why: fn(&TransportError) -> bool,
) -> bool {
    outcome
        .as_ref()
        .err()
        .and_then(SessionError::transport_error)
        .is_some_and(why)
}
