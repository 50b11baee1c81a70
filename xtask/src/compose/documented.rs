//! The compose commands of README.md and docs/operations.md, read from the documents themselves,
//! so that the journey runs what they say, as they say it.
//!
//! A fenced block preceded by `<!-- journey: NAME -->` is run by the journey at its step NAME,
//! with `bash -euo pipefail`, in the workspace; one preceded by `<!-- journey: not run: WHY -->`
//! is not (it needs what the journey does not have). Every block holding a `docker compose`
//! command carries one mark or the other, and every NAME is one the journey runs, so a command
//! added to either document is run or says why not.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context as _, Result, bail};

/// The documents whose compose commands the journey runs.
const DOCUMENTS: [&str; 2] = ["README.md", "docs/operations.md"];
const MARK: &str = "<!-- journey: ";
const NOT_RUN: &str = "not run: ";

/// The steps of the journey that run documented blocks, each by its mark's name.
pub const DEMO_UP: &str = "demo-up";
pub const KEY: &str = "key";
pub const RELOAD: &str = "reload";
pub const START_REPLICA: &str = "start-replica";
pub const STATUS: &str = "status";
pub const PROMETHEUS_UP: &str = "prometheus-up";
const NAMES: [&str; 6] = [DEMO_UP, KEY, RELOAD, START_REPLICA, STATUS, PROMETHEUS_UP];

/// One marked block: where it is, the step that runs it, its commands.
#[derive(Debug, PartialEq, Eq)]
struct Block {
    place: String,
    name: String,
    script: String,
}

/// The documented blocks, and how to run them: `docker compose` as the machine has it, under
/// the journey's project name.
pub struct Documented {
    blocks: Vec<Block>,
    workspace: PathBuf,
    path: std::ffi::OsString,
    env: Vec<(&'static str, String)>,
}

impl Documented {
    /// Reads the documents. `shim` is a directory put first on the `PATH` (a `docker` that
    /// sends `docker compose` to Compose v1 where v2 is missing), `env` what every block runs
    /// with (the project name, the sim's latency).
    pub fn read(
        workspace: &Path,
        shim: Option<&Path>,
        env: Vec<(&'static str, String)>,
    ) -> Result<Self> {
        let mut blocks = Vec::new();
        for document in DOCUMENTS {
            let text = std::fs::read_to_string(workspace.join(document))
                .with_context(|| format!("cannot read {document}"))?;
            blocks.extend(marked_blocks(document, &text)?);
        }
        for name in NAMES {
            if !blocks.iter().any(|block| block.name == name) {
                bail!("no documented block is marked `{MARK}{name} -->`");
            }
        }
        let mut path = std::ffi::OsString::new();
        if let Some(shim) = shim {
            path.push(shim);
            path.push(":");
        }
        path.push(std::env::var_os("PATH").unwrap_or_default());
        Ok(Self {
            blocks,
            workspace: workspace.to_owned(),
            path,
            env,
        })
    }

    /// How many blocks the journey runs.
    pub fn summary(&self) -> String {
        format!(
            "{} blocks to run in {}; every `docker compose` block marked",
            self.blocks.len(),
            DOCUMENTS.join(" and ")
        )
    }

    /// Runs every block marked `name`, in the documents' order; where each is, on success.
    pub fn run(&self, name: &str) -> Result<String> {
        let mut ran = Vec::new();
        for block in self.blocks.iter().filter(|block| block.name == name) {
            let output = Command::new("bash")
                .args(["-euo", "pipefail", "-c", &block.script])
                .current_dir(&self.workspace)
                .env("PATH", &self.path)
                .envs(self.env.iter().map(|(name, value)| (name, value)))
                .stdin(Stdio::null())
                .output()
                .context("cannot run bash")?;
            if !output.status.success() {
                bail!(
                    "{} failed ({}): {}",
                    block.place,
                    output.status,
                    super::tail(&output.stderr)
                );
            }
            ran.push(block.place.clone());
        }
        Ok(format!("ran as written: {}", ran.join(", ")))
    }
}

/// The blocks of `text` marked for the journey; an error for a `docker compose` block without
/// a mark, a mark without a block, or a name the journey does not run.
fn marked_blocks(document: &str, text: &str) -> Result<Vec<Block>> {
    let mut blocks = Vec::new();
    let mut mark: Option<(usize, &str)> = None;
    let mut lines = text.lines().enumerate();
    while let Some((index, line)) = lines.next() {
        let number = index + 1;
        if let Some(rest) = line.trim().strip_prefix(MARK) {
            let name = rest
                .strip_suffix(" -->")
                .with_context(|| format!("{document}:{number}: a mark not closed by ` -->`"))?;
            mark = Some((number, name));
            continue;
        }
        if !is_fence(line) {
            if let Some((at, _)) = mark.filter(|_| !line.trim().is_empty()) {
                bail!("{document}:{at}: a mark not followed by a fenced block");
            }
            continue;
        }
        // A block inside a list item is indented, its lines with it.
        let indent = line.len() - line.trim_start().len();
        let script: Vec<&str> = lines
            .by_ref()
            .map(|(_, line)| line)
            .take_while(|line| !is_fence(line))
            .map(|line| line.get(indent..).unwrap_or(line.trim_start()))
            .collect();
        let script = script.join("\n");
        match mark.take() {
            Some((_, name)) if name.starts_with(NOT_RUN) => {}
            Some((at, name)) => {
                if !NAMES.contains(&name) {
                    bail!("{document}:{at}: `{name}` is no step of the journey ({NAMES:?})");
                }
                blocks.push(Block {
                    place: format!("{document}:{number}"),
                    name: name.to_owned(),
                    script,
                });
            }
            None if script.contains("docker compose") => bail!(
                "{document}:{number}: a block with a `docker compose` command and no \
                 `{MARK}NAME -->` (or `{MARK}{NOT_RUN}WHY -->`) mark before it"
            ),
            None => {}
        }
    }
    if let Some((at, _)) = mark {
        bail!("{document}:{at}: a mark not followed by a fenced block");
    }
    Ok(blocks)
}

fn is_fence(line: &str) -> bool {
    line.trim_start().starts_with("```")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marked_blocks_are_taken_with_their_place_and_unmarked_compose_blocks_refused() {
        let text = "# T\n\n<!-- journey: key -->\n```sh\nset -euo pipefail\nKEY=$(docker compose exec -T api1 x)\n```\n\n<!-- journey: not run: a real platform -->\n```sh\ndocker compose up -d\n```\n\n```sh\ncallstats keys list\n```\n\n- a list item:\n\n  <!-- journey: reload -->\n  ```sh\n  docker compose exec -T lb nginx -t\n    indented more\n  ```\n";
        assert_eq!(
            marked_blocks("doc.md", text).unwrap(),
            [
                Block {
                    place: "doc.md:4".to_owned(),
                    name: "key".to_owned(),
                    script: "set -euo pipefail\nKEY=$(docker compose exec -T api1 x)".to_owned(),
                },
                Block {
                    place: "doc.md:21".to_owned(),
                    name: "reload".to_owned(),
                    script: "docker compose exec -T lb nginx -t\n  indented more".to_owned(),
                }
            ]
        );
        for (text, error) in [
            ("```sh\ndocker compose ps\n```\n", "doc.md:1: a block with"),
            (
                "<!-- journey: nope -->\n```sh\nls\n```\n",
                "`nope` is no step",
            ),
            (
                "<!-- journey: key -->\ntext\n```sh\nls\n```\n",
                "doc.md:1: a mark not followed",
            ),
            ("<!-- journey: key -->\n", "doc.md:1: a mark not followed"),
            (
                "- item:\n\n  ```sh\n  docker compose ps\n  ```\n",
                "doc.md:3: a block with",
            ),
        ] {
            let found = marked_blocks("doc.md", text).unwrap_err().to_string();
            assert!(found.contains(error), "{found}");
        }
    }
}
