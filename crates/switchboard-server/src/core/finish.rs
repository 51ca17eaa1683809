//! Results as each era wants them, and the core's own answers (`initialize`,
//! `server/discover`).
//!
//! Modern results carry `resultType` (`complete` unless the service said otherwise),
//! `_meta["io.modelcontextprotocol/serverInfo"]`, and on the cacheable ones (discover, the
//! lists, `resources/read`) `ttlMs` and `cacheScope`, the service's own when it set them.
//! Legacy results carry none of these: a legacy client never sees `resultType`, and an
//! `input_required` result, which it could not act on, becomes an error saying so. A modern
//! error never uses -32002 (resource not found is -32602 there).

use serde_json::{Map, Value};
use switchboard_protocol::{
    DiscoverResult, Era, InitializeResult, LATEST_LEGACY_VERSION, LEGACY_VERSIONS, meta, methods,
    to_json,
};
use switchboard_wire::ErrorObject;
use switchboard_wire::codes::{INTERNAL_ERROR, INVALID_PARAMS};

use super::{Answer, ClientFacts, ServerInfo};

/// `resultType` of a finished request.
pub const COMPLETE: &str = "complete";
/// `resultType` of a multi-round-trip request that needs the client's input first.
pub const INPUT_REQUIRED: &str = "input_required";

/// Whether a method's complete result carries caching hints (2026-07-28).
pub fn is_cacheable(method: &str) -> bool {
    matches!(
        method,
        methods::SERVER_DISCOVER
            | methods::TOOLS_LIST
            | methods::PROMPTS_LIST
            | methods::RESOURCES_LIST
            | methods::RESOURCES_TEMPLATES_LIST
            | methods::RESOURCES_READ
    )
}

/// A service's answer to `method`, shaped for the client's era.
pub fn finish(answer: Answer, method: &str, facts: &ClientFacts, info: &ServerInfo) -> Answer {
    match (answer, facts.era) {
        (Ok(Value::Object(result)), Era::Modern) => Ok(Value::Object(modern(result, method, info))),
        (Ok(Value::Object(result)), Era::Legacy) => legacy(result, facts),
        (Ok(other), _) => Err(ErrorObject::new(
            INTERNAL_ERROR,
            format!(
                "the server's answer to {method} is not a result object (it is {})",
                switchboard_protocol::json_kind(&other)
            ),
        )),
        (Err(mut error), Era::Modern) => {
            if error.code == switchboard_protocol::error_codes::RESOURCE_NOT_FOUND_LEGACY {
                error.code = INVALID_PARAMS;
            }
            Err(error)
        }
        (Err(error), Era::Legacy) => Err(error),
    }
}

fn modern(mut result: Map<String, Value>, method: &str, info: &ServerInfo) -> Map<String, Value> {
    let result_type = result
        .entry("resultType")
        .or_insert_with(|| Value::String(COMPLETE.into()));
    let complete = result_type.as_str() == Some(COMPLETE);
    if complete && is_cacheable(method) {
        result
            .entry("ttlMs")
            .or_insert_with(|| Value::from(info.cache.ttl_ms));
        result
            .entry("cacheScope")
            .or_insert_with(|| Value::from(info.cache.scope.as_str()));
    }
    let result_meta = result
        .entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(result_meta) = result_meta {
        result_meta
            .entry(meta::SERVER_INFO)
            .or_insert_with(|| to_json(&info.implementation));
    }
    result
}

fn legacy(mut result: Map<String, Value>, facts: &ClientFacts) -> Answer {
    match result.shift_remove("resultType") {
        Some(Value::String(kind)) if kind == INPUT_REQUIRED => {
            return Err(ErrorObject::new(
                INTERNAL_ERROR,
                format!(
                    "the request needs more input from the client (a multi-round-trip \
                     `input_required` result), which protocol version {} cannot carry; use \
                     2026-07-28",
                    facts.protocol_version
                ),
            ));
        }
        _ => {}
    }
    result.shift_remove("ttlMs");
    result.shift_remove("cacheScope");
    Ok(Value::Object(result))
}

/// The version `initialize` settles on: the client's when we speak it, else our newest.
pub fn negotiate(requested: Option<&str>) -> &'static str {
    requested
        .and_then(|requested| LEGACY_VERSIONS.iter().find(|v| **v == requested))
        .copied()
        .unwrap_or(LATEST_LEGACY_VERSION)
}

/// The `initialize` result.
pub fn initialize_result(
    info: &ServerInfo,
    negotiated: &str,
    instructions: Option<String>,
) -> Value {
    to_json(&InitializeResult {
        protocol_version: negotiated.to_owned(),
        capabilities: info.capabilities.declared(),
        server_info: info.implementation.clone(),
        instructions: instructions.filter(|text| !text.is_empty()),
    })
}

/// The `server/discover` result (before [`finish`] adds the modern parts).
pub fn discover_result(info: &ServerInfo, instructions: Option<String>) -> Value {
    to_json(&DiscoverResult {
        supported_versions: switchboard_protocol::supported_versions()
            .into_iter()
            .map(str::to_owned)
            .collect(),
        capabilities: info.capabilities.declared(),
        instructions: instructions.filter(|text| !text.is_empty()),
        meta: None,
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;
    use switchboard_protocol::Implementation;

    use super::*;
    use crate::core::{CacheHints, Capabilities};

    fn info() -> ServerInfo {
        ServerInfo {
            implementation: Implementation {
                name: "s".into(),
                version: "1".into(),
                title: None,
                description: None,
                website_url: None,
            },
            capabilities: Capabilities {
                tools: true,
                ..Capabilities::default()
            },
            cache: CacheHints::default(),
        }
    }

    fn facts(era: Era) -> ClientFacts {
        ClientFacts {
            era,
            protocol_version: Arc::from(match era {
                Era::Modern => "2026-07-28",
                Era::Legacy => "2025-11-25",
            }),
            ..ClientFacts::legacy_default()
        }
    }

    #[test]
    fn results_per_era() {
        let listed = || Ok(json!({"tools": [], "resultType": "complete"}));
        let input = || Ok(json!({"resultType": "input_required", "requestState": "x"}));
        let lines = [
            finish(listed(), "tools/list", &facts(Era::Modern), &info()),
            finish(listed(), "tools/list", &facts(Era::Legacy), &info()),
            finish(
                Ok(json!({"content": []})),
                "tools/call",
                &facts(Era::Modern),
                &info(),
            ),
            finish(input(), "tools/call", &facts(Era::Modern), &info()),
            finish(input(), "tools/call", &facts(Era::Legacy), &info()),
            finish(
                Err(ErrorObject::new(-32002, "gone")),
                "resources/read",
                &facts(Era::Modern),
                &info(),
            ),
        ]
        .map(|answer| match answer {
            Ok(result) => result.to_string(),
            Err(error) => format!("error {}: {}", error.code, error.message),
        });
        expect_test::expect![[r#"
            {"tools":[],"resultType":"complete","ttlMs":0,"cacheScope":"private","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s","version":"1"}}}
            {"tools":[]}
            {"content":[],"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s","version":"1"}}}
            {"resultType":"input_required","requestState":"x","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s","version":"1"}}}
            error -32603: the request needs more input from the client (a multi-round-trip `input_required` result), which protocol version 2025-11-25 cannot carry; use 2026-07-28
            error -32602: gone"#]]
        .assert_eq(&lines.join("\n"));
    }
}
