//! The report formats (JSON, JUnit, text), baselines, and secrets.

use std::path::Path;
use std::time::Duration;

use expect_test::expect;
use serde_json::Value;
use switchboard_check::{Baseline, Endpoint, Options, REPORT_FORMAT, ReportSet};

use crate::support::*;

/// The JSON report's shape: keys and value kinds, without the values that vary.
fn shape(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            Value::Object(map.iter().map(|(k, v)| (k.clone(), shape(v))).collect())
        }
        Value::Array(items) => Value::Array(items.iter().take(1).map(shape).collect()),
        Value::String(_) => Value::String("string".into()),
        Value::Number(_) => Value::String("number".into()),
        Value::Bool(_) => Value::String("bool".into()),
        Value::Null => Value::Null,
    }
}

#[tokio::test]
async fn json_report_has_the_documented_shape() {
    let report = check(
        &fixture("ignores-cancel", &["--mode", "ignores-cancel"]),
        &quick(),
    )
    .await;
    let set = ReportSet {
        reports: vec![report],
        baseline: None,
    };
    let json = set.to_json();
    assert_eq!(json["format"], REPORT_FORMAT);
    assert_eq!(json["passed"], false);
    let server = &json["servers"][0];
    let cancellation = server["checks"]
        .as_array()
        .and_then(|checks| checks.iter().find(|c| c["id"] == "cancellation"))
        .expect("cancellation");
    assert_eq!(cancellation["status"], "fail");
    assert_eq!(
        cancellation["spec"]["url"],
        "https://modelcontextprotocol.io/specification/2025-11-25/basic/utilities/cancellation"
    );
    let mut top = json.clone();
    top["servers"] = Value::Array(vec![]);
    expect![[r#"
        {
          "format": "string",
          "generator": {
            "name": "string",
            "version": "string"
          },
          "spec_base": "string",
          "passed": "bool",
          "summary": {
            "pass": "number",
            "fail": "number",
            "warn": "number",
            "skip": "number",
            "baselined": "number",
            "servers": "number"
          },
          "servers": [],
          "baseline": null
        }"#]]
    .assert_eq(&serde_json::to_string_pretty(&shape(&top)).expect("json"));
    let mut server_shape = shape(server);
    server_shape["checks"] = Value::Array(vec![]);
    expect![[r#"
        {
          "name": "string",
          "transport": "string",
          "era": "string",
          "protocol_version": "string",
          "server_info": {
            "name": "string",
            "version": "string"
          },
          "duration_ms": "number",
          "summary": {
            "pass": "number",
            "fail": "number",
            "warn": "number",
            "skip": "number",
            "baselined": "number"
          },
          "notes": [],
          "stderr_tail": "string",
          "checks": []
        }"#]]
    .assert_eq(&serde_json::to_string_pretty(&server_shape).expect("json"));
    expect![[r#"
        {
          "id": "string",
          "title": "string",
          "severity": "string",
          "spec": {
            "section": "string",
            "url": "string"
          },
          "seed_step": "number",
          "status": "string",
          "summary": "string",
          "fix": "string",
          "baselined": "bool",
          "duration_ms": "number",
          "evidence": {
            "exchanges": [
              {
                "label": "string",
                "sent": {
                  "method": "string",
                  "params": {
                    "name": "string",
                    "arguments": {
                      "duration_ms": "number",
                      "steps": "number"
                    }
                  }
                },
                "received": {
                  "outcome": "string"
                },
                "elapsed_ms": "number"
              }
            ],
            "notes": [
              "string"
            ],
            "stderr_tail": "string"
          }
        }"#]]
    .assert_eq(&serde_json::to_string_pretty(&shape(cancellation)).expect("json"));
}

#[tokio::test]
async fn junit_and_baselines() {
    let report = check(
        &fixture("ignores-cancel", &["--mode", "ignores-cancel"]),
        &quick(),
    )
    .await;
    let mut set = ReportSet {
        reports: vec![report],
        baseline: None,
    };
    let junit = set.to_junit();
    // One test case per check of the registry; the one failure is `cancellation`.
    let counts = set.counts();
    assert_eq!(counts.fail, 1);
    let head = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"switchboard check\" tests=\"{}\" failures=\"1\" skipped=\"{}\"",
        switchboard_check::CHECKS.len(),
        counts.skip
    );
    assert!(junit.starts_with(&head), "{junit}");
    assert!(
        junit.contains(
            "<testcase classname=\"switchboard-check.ignores-cancel\" name=\"cancellation\""
        ),
        "{junit}"
    );
    assert_eq!(junit.matches("<failure ").count(), 1);
    assert_eq!(
        junit.matches("<testcase ").count(),
        switchboard_check::CHECKS.len()
    );
    assert!(!set.passed());

    // Listed: expected, the run passes.
    let baseline = Baseline::parse(
        "server:\n  - ignores-cancel:cancellation\n",
        Path::new("b.yml"),
    )
    .expect("baseline");
    set.baseline = Some(baseline.apply(&mut set.reports));
    assert!(set.passed(), "{}", set.render_text());
    assert_eq!(
        set.baseline.as_ref().map(|b| b.expected.clone()),
        Some(vec!["ignores-cancel:cancellation".to_owned()])
    );
    assert!(
        set.to_junit()
            .contains("<skipped message=\"expected failure (baseline): ")
    );

    // A listed check that passes is stale, which fails the run.
    let report = check(&fixture("good", &[]), &quick()).await;
    let mut set = ReportSet {
        reports: vec![report],
        baseline: None,
    };
    let baseline = Baseline::parse("server: [shutdown]\n", Path::new("b.yml")).expect("baseline");
    set.baseline = Some(baseline.apply(&mut set.reports));
    assert!(!set.passed());
    assert_eq!(
        set.baseline.as_ref().map(|b| b.stale.clone()),
        Some(vec!["shutdown".to_owned()])
    );
}

#[tokio::test]
async fn configured_secrets_never_reach_the_report() {
    let mut spec = fixture(
        "no-init-reply",
        &["--mode", "no-init-reply", "--name", "s3cr3t-t0ken-value"],
    );
    if let Endpoint::Stdio(process) = &mut spec.transport {
        process
            .env
            .push(("API_TOKEN".into(), "s3cr3t-t0ken-value".into()));
    }
    let options = Options {
        connect_timeout: Duration::from_millis(500),
        ..quick()
    };
    let report = check(&spec, &options).await;
    let json = report.to_json().to_string();
    assert!(!json.contains("s3cr3t-t0ken-value"), "{json}");
    assert!(!report.render_text().contains("s3cr3t-t0ken-value"));
}
