//! `switchboard audit verify FILE...`: checks the hash chain of the gateway's audit log
//! (`audit_log`), files oldest first (`log.2 log.1 log`). Exit 0 with the
//! number of lines when the chain is intact; exit 1 naming the first line that is not
//! JSON, was edited, or does not follow the line before it (one removed or reordered).

use std::path::PathBuf;

use crate::audit_log as audit;

use crate::Failure;
use crate::terminal::print;

/// What `audit` does.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum AuditCommand {
    /// Check an audit log's hash chain: every line's hash and its link to the line before.
    /// Give rotated files oldest first (`audit.log.2 audit.log.1 audit.log`). Exit codes:
    /// 0 intact, 1 a line was edited, removed or reordered, or is not JSON.
    Verify {
        /// The log files, oldest first.
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
    },
}

pub(crate) fn run(command: AuditCommand) -> Result<u8, Failure> {
    match command {
        AuditCommand::Verify { files } => match audit::verify(&files) {
            Ok(chain) => {
                let from = if chain.continues_earlier {
                    " (it continues a rotated file not given here)"
                } else {
                    ""
                };
                print(&format!("{} lines, chain intact{from}\n", chain.lines));
                Ok(0)
            }
            Err(broken) => {
                print(&format!("chain broken: {broken}\n"));
                Ok(1)
            }
        },
    }
}
