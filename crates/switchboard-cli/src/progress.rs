//! A call's progress on a terminal: the server's `notifications/progress` (message,
//! progress and total) drawn as one indicatif line on stderr while the call runs, cleared
//! when it ends. Nothing at all when stderr is not a terminal. The server's message is
//! sanitised (`terminal::shown_on_stderr`) and cut; the template and its colour are ours.

use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use switchboard_protocol::ProgressParams;
use tokio::sync::mpsc;

use crate::terminal::{self, Colouring};

/// Progress notifications waiting to be drawn (the session drops more when it is full).
const QUEUED_PROGRESS: usize = 16;

/// The most of a server's progress message shown, in characters.
const MAX_MESSAGE_CHARS: usize = 120;

/// A bar's length when the server gives a total: progress is drawn in thousandths.
const BAR_STEPS: u64 = 1000;

/// What shows one call's progress, if anything does.
#[derive(Debug)]
pub(crate) struct CallProgress {
    shown: Option<Shown>,
}

#[derive(Debug)]
struct Shown {
    sender: mpsc::Sender<ProgressParams>,
    bar: ProgressBar,
    drawer: tokio::task::JoinHandle<()>,
}

impl CallProgress {
    /// Progress for a call of `tool`: drawn when stderr is a terminal, else nothing.
    pub(crate) fn for_call(tool: &str) -> CallProgress {
        if !terminal::stderr_is_terminal() {
            return CallProgress { shown: None };
        }
        let (sender, mut updates) = mpsc::channel::<ProgressParams>(QUEUED_PROGRESS);
        let bar = terminal::progress_bar(style(Total::Unknown));
        bar.set_message(format!("{}: waiting", terminal::shown_on_stderr(tool)));
        bar.enable_steady_tick(Duration::from_millis(120));
        let label = terminal::shown_on_stderr(tool);
        let drawn = bar.clone();
        let drawer = tokio::spawn(async move {
            let mut with_total = false;
            while let Some(update) = updates.recv().await {
                if let Some(total) = update.total.filter(|t| *t > 0.0) {
                    if !with_total {
                        with_total = true;
                        drawn.set_style(style(Total::Known));
                        drawn.set_length(BAR_STEPS);
                    }
                    let share = (update.progress / total).clamp(0.0, 1.0);
                    drawn.set_position((share * BAR_STEPS as f64) as u64);
                }
                drawn.set_message(format!("{label}: {}", progress_text(&update)));
            }
        });
        CallProgress {
            shown: Some(Shown {
                sender,
                bar,
                drawer,
            }),
        }
    }

    /// The sender for `CallOptions::progress`, when progress is shown.
    pub(crate) fn sender(&self) -> Option<mpsc::Sender<ProgressParams>> {
        self.shown.as_ref().map(|shown| shown.sender.clone())
    }

    /// Stops drawing and clears the line.
    pub(crate) fn finish(self) {
        if let Some(shown) = self.shown {
            shown.drawer.abort();
            shown.bar.finish_and_clear();
        }
    }
}

/// Whether the server said how much there is to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Total {
    Known,
    Unknown,
}

/// Our template: a spinner, a bar when the total is known, the message; coloured only as
/// `terminal` decides.
fn style(total: Total) -> ProgressStyle {
    let template = match (total, terminal::stderr_colouring()) {
        (Total::Known, Colouring::Styled) => "{spinner:.cyan} {bar:24.cyan/blue} {msg}",
        (Total::Known, Colouring::Plain) => "{spinner} {bar:24} {msg}",
        (Total::Unknown, Colouring::Styled) => "{spinner:.cyan} {msg}",
        (Total::Unknown, Colouring::Plain) => "{spinner} {msg}",
    };
    ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_spinner())
}

/// `3/5 step 3`: progress and total as numbers, the server's message sanitised and cut.
fn progress_text(update: &ProgressParams) -> String {
    let amount = match update.total {
        Some(total) => format!("{}/{}", number(update.progress), number(total)),
        None => number(update.progress),
    };
    match &update.message {
        Some(message) => {
            let shown: String = terminal::shown_on_stderr(message)
                .chars()
                .take(MAX_MESSAGE_CHARS)
                .collect();
            format!("{amount} {shown}")
        }
        None => amount,
    }
}

/// A progress number without a needless `.0`.
fn number(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() < 1e15 {
        format!("{}", value as i64)
    } else {
        format!("{value:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_reads_as_amount_and_safe_message() {
        let update = |progress: f64, total: Option<f64>, message: Option<&str>| ProgressParams {
            progress_token: serde_json::json!(1),
            progress,
            total,
            message: message.map(str::to_owned),
        };
        expect_test::expect![[r#"
            2/5 step 2
            0.25
            7/10.50 \u{1b}[2J gone
        "#]]
        .assert_eq(&format!(
            "{}\n{}\n{}\n",
            progress_text(&update(2.0, Some(5.0), Some("step 2"))),
            progress_text(&update(0.25, None, None)),
            progress_text(&update(7.0, Some(10.5), Some("\u{1b}[2J gone"))),
        ));
    }
}
