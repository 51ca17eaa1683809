//! The authoring kit against its contract: derived schemas, argument checks and their
//! messages, bounded results, panics, cancellation, progress, prompts and resources,
//! build errors. Requests go straight to the [`Service`]; the transports have their own
//! tests.

use std::time::Duration;

use expect_test::expect;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::*;
use crate::core::{
    CallTool, ClientFacts, GetPrompt, InputRound, Page, ReadResource, Service, ServiceRequest,
};

/// A bound on each wait, to detect a hang (never a speed assertion).
const HANG: Duration = Duration::from_secs(20);

fn context() -> RequestContext {
    RequestContext::new(
        ClientFacts::legacy_default(),
        CancellationToken::new(),
        None,
        None,
    )
}

fn call(name: &str, arguments: Value) -> ServiceRequest {
    let Value::Object(arguments) = arguments else {
        panic!("arguments must be an object");
    };
    ServiceRequest::CallTool(CallTool {
        name: name.into(),
        arguments,
        input: InputRound::default(),
    })
}

async fn answer(server: &Server, request: ServiceRequest, context: RequestContext) -> String {
    let answer = tokio::time::timeout(HANG, server.handle(request, context))
        .await
        .expect("the server answers");
    match answer {
        Ok(result) => result.to_string(),
        Err(error) => format!("error {}: {}", error.code, error.message),
    }
}

/// Where to send a parcel.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Ship {
    /// Who gets it.
    to: Address,
    /// How heavy it is, in grams.
    #[schemars(range(min = 1, max = 30000))]
    grams: u32,
    /// How fast.
    #[serde(default)]
    speed: Speed,
    /// A note for the courier.
    note: Option<String>,
}

/// A postal address.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Address {
    /// The street and number.
    street: String,
    /// The city.
    city: String,
}

/// Delivery speed.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Speed {
    #[default]
    Standard,
    Express,
}

/// A shipping label.
#[derive(Debug, Serialize, JsonSchema)]
struct Label {
    /// The tracking code.
    tracking: String,
}

async fn ship(input: Ship, _: RequestContext) -> Result<Structured<Label>, ToolError> {
    if input.to.city == "Atlantis" {
        return Err(ToolError::new(
            "no deliveries to `Atlantis`; give a city on land",
        ));
    }
    let label = Label {
        tracking: format!("{}-{:?}-{}", input.to.city, input.speed, input.grams),
    };
    let _ = (input.note, input.to.street);
    Ok(Structured::new(label))
}

#[derive(Debug, Deserialize, JsonSchema)]
struct Say {
    /// What to say.
    text: String,
}

fn shop() -> Server {
    Server::builder("shop", "1.0.0")
        .instructions("Ships parcels.")
        .tool(Tool::new("ship", "Ships a parcel.", ship).title("Ship a parcel"))
        .tool(
            Tool::new("say", "Says the text.", |input: Say, _| async move {
                Ok(input.text)
            })
            .read_only(),
        )
        .build()
        .expect("a valid server")
}

fn pretty(text: &str) -> String {
    let value: Value = serde_json::from_str(text).expect("JSON");
    serde_json::to_string_pretty(&value).expect("pretty")
}

#[tokio::test]
async fn derived_schemas_are_listed_in_registration_order() {
    let listed = answer(
        &shop(),
        ServiceRequest::ListTools(Page::default()),
        context(),
    )
    .await;
    expect![[r##"
        {
          "tools": [
            {
              "name": "ship",
              "title": "Ship a parcel",
              "description": "Ships a parcel.",
              "inputSchema": {
                "type": "object",
                "additionalProperties": false,
                "properties": {
                  "to": {
                    "$ref": "#/$defs/Address",
                    "description": "Who gets it."
                  },
                  "grams": {
                    "type": "integer",
                    "format": "uint32",
                    "minimum": 1,
                    "description": "How heavy it is, in grams.",
                    "maximum": 30000
                  },
                  "speed": {
                    "$ref": "#/$defs/Speed",
                    "description": "How fast."
                  },
                  "note": {
                    "type": [
                      "string",
                      "null"
                    ],
                    "description": "A note for the courier."
                  }
                },
                "required": [
                  "to",
                  "grams"
                ],
                "description": "Where to send a parcel.",
                "$defs": {
                  "Address": {
                    "type": "object",
                    "additionalProperties": false,
                    "properties": {
                      "street": {
                        "type": "string",
                        "description": "The street and number."
                      },
                      "city": {
                        "type": "string",
                        "description": "The city."
                      }
                    },
                    "required": [
                      "street",
                      "city"
                    ],
                    "description": "A postal address."
                  },
                  "Speed": {
                    "type": "string",
                    "enum": [
                      "standard",
                      "express"
                    ],
                    "description": "Delivery speed."
                  }
                },
                "$schema": "https://json-schema.org/draft/2020-12/schema"
              },
              "outputSchema": {
                "type": "object",
                "properties": {
                  "tracking": {
                    "type": "string",
                    "description": "The tracking code."
                  }
                },
                "required": [
                  "tracking"
                ],
                "description": "A shipping label.",
                "$schema": "https://json-schema.org/draft/2020-12/schema"
              }
            },
            {
              "name": "say",
              "description": "Says the text.",
              "inputSchema": {
                "type": "object",
                "properties": {
                  "text": {
                    "type": "string",
                    "description": "What to say."
                  }
                },
                "required": [
                  "text"
                ],
                "$schema": "https://json-schema.org/draft/2020-12/schema"
              },
              "annotations": {
                "readOnlyHint": true
              }
            }
          ]
        }"##]]
    .assert_eq(&pretty(&listed));
    // `$defs` are local: a client that wants one flat schema can inline them.
    let listed: Value = serde_json::from_str(&listed).expect("JSON");
    let flat = switchboard_runtime::schema::normalize(&listed["tools"][0]["inputSchema"])
        .expect("inlinable");
    expect![[r#"{"type":"object","additionalProperties":false,"properties":{"to":{"type":"object","additionalProperties":false,"properties":{"street":{"type":"string","description":"The street and number."},"city":{"type":"string","description":"The city."}},"required":["street","city"],"description":"Who gets it."},"grams":{"type":"integer","format":"uint32","minimum":1,"description":"How heavy it is, in grams.","maximum":30000},"speed":{"type":"string","enum":["standard","express"],"description":"How fast."},"note":{"type":["string","null"],"description":"A note for the courier."}},"required":["to","grams"],"description":"Where to send a parcel."}"#]]
    .assert_eq(&flat.to_string());
}

#[tokio::test]
async fn arguments_are_checked_before_the_handler_runs() {
    let server = shop();
    let address = json!({"street": "1 Main St", "city": "Lyon"});
    let cases = [
        ("ship", json!({"to": address, "grams": 500})),
        (
            "ship",
            json!({"to": address, "grams": 500, "speed": "express"}),
        ),
        ("ship", json!({"grams": 500})),
        ("ship", json!({"to": address, "grams": "heavy"})),
        ("ship", json!({"to": address, "grams": 0})),
        (
            "ship",
            json!({"to": address, "grams": 500, "speed": "warp"}),
        ),
        ("ship", json!({"to": {"street": "x"}, "grams": 500})),
        (
            "ship",
            json!({"to": address, "grams": 500, "colour": "red"}),
        ),
        (
            "ship",
            json!({"to": {"street": "x", "city": "y", "zip": 1}, "grams": 500}),
        ),
        ("ship", json!({"to": address, "grams": 4_294_967_296_u64})),
        (
            "ship",
            json!({"to": {"street": "1 Reef", "city": "Atlantis"}, "grams": 5}),
        ),
        ("say", json!({"text": "hi", "extra": 1})),
        ("nope", json!({})),
    ];
    let mut lines = Vec::new();
    for (tool, arguments) in cases {
        let shown = arguments.to_string();
        lines.push(format!(
            "{tool} {shown}\n  → {}",
            answer(&server, call(tool, arguments), context()).await
        ));
    }
    expect![[r#"
        ship {"to":{"street":"1 Main St","city":"Lyon"},"grams":500}
          → {"content":[{"type":"text","text":"{\"tracking\":\"Lyon-Standard-500\"}"}],"structuredContent":{"tracking":"Lyon-Standard-500"}}
        ship {"to":{"street":"1 Main St","city":"Lyon"},"grams":500,"speed":"express"}
          → {"content":[{"type":"text","text":"{\"tracking\":\"Lyon-Express-500\"}"}],"structuredContent":{"tracking":"Lyon-Express-500"}}
        ship {"grams":500}
          → {"content":[{"type":"text","text":"invalid arguments for tool `ship`: arguments: \"to\" is a required property"}],"isError":true}
        ship {"to":{"street":"1 Main St","city":"Lyon"},"grams":"heavy"}
          → {"content":[{"type":"text","text":"invalid arguments for tool `ship`: `grams`: \"heavy\" is not of type \"integer\""}],"isError":true}
        ship {"to":{"street":"1 Main St","city":"Lyon"},"grams":0}
          → {"content":[{"type":"text","text":"invalid arguments for tool `ship`: `grams`: 0 is less than the minimum of 1"}],"isError":true}
        ship {"to":{"street":"1 Main St","city":"Lyon"},"grams":500,"speed":"warp"}
          → {"content":[{"type":"text","text":"invalid arguments for tool `ship`: `speed`: \"warp\" is not one of \"standard\" or \"express\""}],"isError":true}
        ship {"to":{"street":"x"},"grams":500}
          → {"content":[{"type":"text","text":"invalid arguments for tool `ship`: `to`: \"city\" is a required property"}],"isError":true}
        ship {"to":{"street":"1 Main St","city":"Lyon"},"grams":500,"colour":"red"}
          → {"content":[{"type":"text","text":"invalid arguments for tool `ship`: `colour`: not one of the arguments (to, grams, speed, note)"}],"isError":true}
        ship {"to":{"street":"x","city":"y","zip":1},"grams":500}
          → {"content":[{"type":"text","text":"invalid arguments for tool `ship`: `to.zip`: not a key `to` has"}],"isError":true}
        ship {"to":{"street":"1 Main St","city":"Lyon"},"grams":4294967296}
          → {"content":[{"type":"text","text":"invalid arguments for tool `ship`: `grams`: 4294967296 is greater than the maximum of 30000"}],"isError":true}
        ship {"to":{"street":"1 Reef","city":"Atlantis"},"grams":5}
          → {"content":[{"type":"text","text":"no deliveries to `Atlantis`; give a city on land"}],"isError":true}
        say {"text":"hi","extra":1}
          → {"content":[{"type":"text","text":"hi"}]}
        nope {}
          → error -32602: unknown tool `nope`; the tools are: ship, say"#]]
    .assert_eq(&lines.join("\n"));
}

#[derive(Debug, Deserialize, JsonSchema)]
struct Size {
    bytes: usize,
}

#[tokio::test]
async fn results_over_the_cap_are_errors_that_say_the_size() {
    let server = Server::builder("big", "1")
        .tool(Tool::new(
            "dump",
            "Returns this many bytes of text.",
            |input: Size, _| async move { Ok("x".repeat(input.bytes)) },
        ))
        .max_result_bytes(100)
        .build()
        .expect("server");
    let lines = [
        answer(&server, call("dump", json!({"bytes": 10})), context()).await,
        // 39 bytes of JSON around the text: 61 fit exactly, 62 do not.
        answer(&server, call("dump", json!({"bytes": 61})), context())
            .await
            .len()
            .to_string(),
        answer(&server, call("dump", json!({"bytes": 62})), context()).await,
        answer(&server, call("dump", json!({"bytes": 5000})), context()).await,
    ];
    expect![[r#"
        {"content":[{"type":"text","text":"xxxxxxxxxx"}]}
        100
        {"content":[{"type":"text","text":"tool `dump` produced a result of 101 bytes, over this server's limit of 100 bytes; ask for less (a narrower request, or part of it)"}],"isError":true}
        {"content":[{"type":"text","text":"tool `dump` produced a result of 5039 bytes, over this server's limit of 100 bytes; ask for less (a narrower request, or part of it)"}],"isError":true}"#]]
    .assert_eq(&lines.join("\n"));
    assert_eq!(DEFAULT_MAX_RESULT_BYTES, 1 << 20);
}

#[tokio::test]
async fn a_panicking_handler_is_an_error_result_and_the_server_goes_on() {
    let server = Server::builder("fragile", "1")
        .tool(Tool::new(
            "explode",
            "Panics.",
            |_: NoArguments, _| async move {
                if true {
                    panic!("the flux capacitor is empty");
                }
                Ok("unreachable")
            },
        ))
        .tool(Tool::new(
            "fine",
            "Works.",
            |_: NoArguments, _| async move { Ok("still here") },
        ))
        .build()
        .expect("server");
    let lines = [
        answer(&server, call("explode", json!({})), context()).await,
        answer(&server, call("fine", json!({})), context()).await,
        answer(
            &server,
            call("fine", json!({"unexpected": true})),
            context(),
        )
        .await,
    ];
    expect![[r#"
        {"content":[{"type":"text","text":"tool `explode` failed: its handler panicked (the flux capacitor is empty); this is a bug in the server, not in the request"}],"isError":true}
        {"content":[{"type":"text","text":"still here"}]}
        {"content":[{"type":"text","text":"invalid arguments for tool `fine`: `unexpected`: this takes no arguments"}],"isError":true}"#]]
    .assert_eq(&lines.join("\n"));
}

/// Sends on its channel when dropped: tells a test that a handler's future is gone.
struct DropSignal(Option<oneshot::Sender<()>>);

impl Drop for DropSignal {
    fn drop(&mut self) {
        if let Some(signal) = self.0.take() {
            let _ = signal.send(());
        }
    }
}

#[tokio::test]
async fn cancelling_a_call_drops_the_handler_and_progress_reaches_the_client() {
    let (started_tx, started_rx) = mpsc::channel::<()>(1);
    let (dropped_tx, dropped_rx) = oneshot::channel::<()>();
    let dropped_tx = std::sync::Mutex::new(Some(dropped_tx));
    let server = Server::builder("patient", "1")
        .tool(Tool::new(
            "wait",
            "Reports progress, then waits forever.",
            move |_: NoArguments, context: RequestContext| {
                let started = started_tx.clone();
                let signal = DropSignal(dropped_tx.lock().expect("lock").take());
                async move {
                    let _signal = signal;
                    context.progress(1.0, Some(2.0), Some("halfway")).await;
                    let _ = started.send(()).await;
                    std::future::pending::<()>().await;
                    Ok("never")
                }
            },
        ))
        .build()
        .expect("server");
    let (notifications_tx, mut notifications) = mpsc::channel(8);
    let cancel = CancellationToken::new();
    let mut meta = Map::new();
    meta.insert("progressToken".into(), json!("p1"));
    let context = RequestContext::new(
        ClientFacts::legacy_default(),
        cancel.clone(),
        Some(meta),
        Some(notifications_tx),
    );
    let running = tokio::spawn({
        let server = server.clone();
        async move { answer(&server, call("wait", json!({})), context).await }
    });
    let mut started_rx = started_rx;
    tokio::time::timeout(HANG, started_rx.recv())
        .await
        .expect("the handler starts");
    let progress = notifications.try_recv().expect("progress was sent first");
    cancel.cancel();
    let answered = tokio::time::timeout(HANG, running)
        .await
        .expect("the call ends")
        .expect("no panic");
    tokio::time::timeout(HANG, dropped_rx)
        .await
        .expect("the handler's future is dropped")
        .expect("dropped, not leaked");
    expect![[r#"
        notifications/progress {"progressToken":"p1","progress":1.0,"total":2.0,"message":"halfway"}
        error -32603: the request was cancelled"#]]
    .assert_eq(&format!(
        "{} {}\n{answered}",
        progress.method, progress.params
    ));
}

#[tokio::test]
async fn tool_errors_for_the_model_and_for_the_protocol() {
    let server = Server::builder("picky", "1")
        .tool(Tool::new(
            "model",
            "Fails for the model.",
            |_: NoArguments, _| async move {
                Err::<String, _>(ToolError::new("the quota is used up; try again tomorrow"))
            },
        ))
        .tool(Tool::new(
            "protocol",
            "Fails the request.",
            |_: NoArguments, _| async move {
                Err::<String, _>(ToolError::invalid_params("`when` is in the past"))
            },
        ))
        .build()
        .expect("server");
    let lines = [
        answer(&server, call("model", json!({})), context()).await,
        answer(&server, call("protocol", json!({})), context()).await,
        answer(
            &server,
            ServiceRequest::ListTools(Page {
                cursor: Some("page-2".into()),
            }),
            context(),
        )
        .await,
    ];
    expect![[r#"
        {"content":[{"type":"text","text":"the quota is used up; try again tomorrow"}],"isError":true}
        error -32602: `when` is in the past
        error -32602: invalid cursor `page-2`: this server lists everything on one page and issues no cursors"#]]
    .assert_eq(&lines.join("\n"));
    assert!(ToolError::invalid_params("x").is_protocol());
    assert!(!ToolError::new("x").is_protocol());
}

/// The arguments of the `greet` prompt.
#[derive(Debug, Deserialize, JsonSchema)]
struct Greeting {
    /// Whom to greet.
    name: String,
    /// In which language (English if not given).
    language: Option<String>,
}

#[tokio::test]
async fn prompts_and_resources() {
    let server = Server::builder("host", "1")
        .prompt(Prompt::new(
            "greet",
            "Greets someone.",
            |input: Greeting, _| async move {
                let language = input.language.unwrap_or_else(|| "English".into());
                Ok(vec![
                    PromptMessage::user(format!("Greet {} in {language}.", input.name)),
                    PromptMessage::assistant("Gladly."),
                ])
            },
        ))
        .resource(Resource::text("note://readme", "readme", "Read me.").description("A note."))
        .resource(
            Resource::dynamic("note://clock", "clock", |_| async move {
                Ok(ResourceContents::Text("noon".into()))
            })
            .mime_type("text/plain"),
        )
        .build()
        .expect("server");
    let get = |name: &str, arguments: Value| {
        ServiceRequest::GetPrompt(GetPrompt {
            name: name.into(),
            arguments: arguments.as_object().cloned(),
            input: InputRound::default(),
        })
    };
    let read = |uri: &str| {
        ServiceRequest::ReadResource(ReadResource {
            uri: uri.into(),
            input: InputRound::default(),
        })
    };
    let lines = [
        answer(
            &server,
            ServiceRequest::ListPrompts(Page::default()),
            context(),
        )
        .await,
        answer(&server, get("greet", json!({"name": "Ada"})), context()).await,
        answer(&server, get("greet", json!({})), context()).await,
        answer(&server, get("wave", json!({})), context()).await,
        answer(
            &server,
            ServiceRequest::ListResources(Page::default()),
            context(),
        )
        .await,
        answer(&server, read("note://readme"), context()).await,
        answer(&server, read("note://clock"), context()).await,
        answer(&server, read("note://nothing"), context()).await,
        answer(
            &server,
            ServiceRequest::ListResourceTemplates(Page::default()),
            context(),
        )
        .await,
    ];
    expect![[r#"
        {"prompts":[{"name":"greet","description":"Greets someone.","arguments":[{"name":"name","description":"Whom to greet.","required":true},{"name":"language","description":"In which language (English if not given).","required":false}]}]}
        {"description":"Greets someone.","messages":[{"role":"user","content":{"type":"text","text":"Greet Ada in English."}},{"role":"assistant","content":{"type":"text","text":"Gladly."}}]}
        error -32602: invalid arguments for prompt `greet`: arguments: "name" is a required property
        error -32602: unknown prompt `wave`; the prompts are: greet
        {"resources":[{"uri":"note://readme","name":"readme","description":"A note.","mimeType":"text/plain"},{"uri":"note://clock","name":"clock","mimeType":"text/plain"}]}
        {"contents":[{"uri":"note://readme","mimeType":"text/plain","text":"Read me."}]}
        {"contents":[{"uri":"note://clock","mimeType":"text/plain","text":"noon"}]}
        error -32002: no resource `note://nothing`; the resources are: note://readme, note://clock
        {"resourceTemplates":[]}"#]].assert_eq(&lines.join("\n"));
    let capabilities = switchboard_protocol::to_json(&server.info().capabilities.declared());
    expect![[
        r#"{"prompts":{"listChanged":false},"resources":{"listChanged":false},"logging":{}}"#
    ]]
    .assert_eq(&capabilities.to_string());
}

#[test]
fn what_cannot_be_served_is_refused_at_build() {
    let say = || {
        Tool::new(
            "say",
            "Says.",
            |input: Say, _| async move { Ok(input.text) },
        )
    };
    let refused = |builder: ServerBuilder| match builder.build() {
        Ok(_) => "built".to_owned(),
        Err(error) => format!(
            "{error} (duplicate {}, name {}, schema {})",
            error.is_duplicate(),
            error.is_invalid_name(),
            error.is_schema()
        ),
    };
    #[derive(Deserialize, JsonSchema)]
    enum Choice {
        A,
        B,
    }
    #[derive(Deserialize, JsonSchema)]
    struct Count {
        _n: u32,
    }
    let lines = [
        refused(Server::builder("s", "1").tool(say()).tool(say())),
        refused(Server::builder("s", "1").tool(Tool::new(
            "say it",
            "Says.",
            |input: Say, _| async move { Ok(input.text) },
        ))),
        refused(Server::builder("s", "1").tool(Tool::new(
            "pick",
            "Picks.",
            |_: Choice, _| async move { Ok("picked") },
        ))),
        refused(Server::builder("s", "1").tool(Tool::new(
            "word",
            "Takes a bare string.",
            |input: String, _| async move { Ok(input) },
        ))),
        refused(Server::builder("s", "1").prompt(Prompt::new(
            "count",
            "Counts.",
            |_: Count, _| async move { Ok(vec![]) },
        ))),
        refused(
            Server::builder("s", "1")
                .resource(Resource::text("a://x", "x", "1"))
                .resource(Resource::text("a://x", "y", "2")),
        ),
        refused(Server::builder("s", "1").tool(say())),
    ];
    expect![[r#"
        tool `say` is registered twice (duplicate true, name false, schema false)
        tool `say it` has ' ' in its name; tool names use only A–Z, a–z, 0–9, `_`, `-` and `.` (duplicate false, name true, schema false)
        the input type of tool `pick` has a schema with type "string" at its root; MCP needs an object (use a struct with named fields) (duplicate false, name false, schema true)
        the input type of tool `word` has a schema with type "string" at its root; MCP needs an object (use a struct with named fields) (duplicate false, name false, schema true)
        prompt `count` has argument `_n` that is not a string; prompt arguments are strings (duplicate false, name false, schema true)
        resource `a://x` is registered twice (duplicate true, name false, schema false)
        built"#]].assert_eq(&lines.join("\n"));
}

#[tokio::test]
async fn a_handler_asks_its_client_and_a_client_that_cannot_answer_is_a_result_for_the_model() {
    let server = Server::builder("asking", "1")
        .tool(Tool::new(
            "name",
            "Asks the user for their name.",
            |_: NoArguments, context: RequestContext| async move {
                let params = json!({ "message": "Your name?", "requestedSchema": {
                    "type": "object", "properties": { "name": { "type": "string" } },
                }});
                let answer = context
                    .ask_client(ClientMethod::Elicitation, params)
                    .await?;
                Ok(format!("hello, {}", answer["content"]["name"]))
            },
        ))
        .build()
        .expect("server");
    // A client that declared elicitation, on a transport that carries questions.
    let facts = ClientFacts {
        capabilities: std::sync::Arc::new(json!({ "elicitation": {} })),
        ..ClientFacts::legacy_default()
    };
    let (asks, mut asked) = mpsc::channel(4);
    let declared = RequestContext::new(facts, CancellationToken::new(), None, None)
        .with_questions(asks, crate::core::SessionKey::fresh());
    let running = tokio::spawn({
        let server = server.clone();
        async move { answer(&server, call("name", json!({})), declared).await }
    });
    let question = tokio::time::timeout(HANG, asked.recv())
        .await
        .expect("asked in time")
        .expect("a question");
    assert_eq!(question.method, ClientMethod::Elicitation);
    let _ = question.reply.send(Ok(
        json!({ "action": "accept", "content": { "name": "Ada" } }),
    ));
    let answered = tokio::time::timeout(HANG, running)
        .await
        .expect("the call ends")
        .expect("no panic");
    // One that declared nothing is not asked.
    let unable = answer(&server, call("name", json!({})), context()).await;
    expect![[r#"
        {"content":[{"type":"text","text":"hello, \"Ada\""}]}
        {"content":[{"type":"text","text":"the client did not declare the `elicitation` capability, which `elicitation/create` needs"}],"isError":true}"#]]
    .assert_eq(&format!("{answered}\n{unable}"));
}
