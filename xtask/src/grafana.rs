//! `cargo xtask grafana`: the dashboard (deploy/grafana/callstats.json) type-checked against
//! Grafana's own types.
//!
//! `@grafana/schema` is the TypeScript form of the schema Grafana itself validates dashboards
//! against; its version is the Grafana image docker-compose.yml runs. The dashboard's JSON is
//! written into a TypeScript module as an object literal that must satisfy `Dashboard`:
//! `tsc --strict` then checks every field's name and type, nested panels and targets included
//! (an object literal allows no field the type does not have), which a JSON Schema of the
//! dashboard alone would not. Installs the packages, pinned, with npm under the target
//! directory on first use.

use std::path::Path;
use std::process::Command;

use anyhow::{Context as _, Result, bail};

use crate::node::{TYPESCRIPT_VERSION, npm_install};
use crate::process::{in_scratch_dir, target_dir};

/// The Grafana release of docker-compose.yml's `grafana` image, and so of its types.
const GRAFANA_SCHEMA_VERSION: &str = "11.1.0";

pub fn run(workspace: &Path) -> Result<()> {
    let tools = npm_install(
        &target_dir(),
        &format!("npm-grafana-schema-{GRAFANA_SCHEMA_VERSION}-typescript-{TYPESCRIPT_VERSION}"),
        &[
            ("@grafana/schema", GRAFANA_SCHEMA_VERSION),
            ("typescript", TYPESCRIPT_VERSION),
        ],
        &["tsc"],
    )?;
    let path = workspace.join("deploy/grafana/callstats.json");
    let dashboard = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    // Parsed first, so that a JSON error is reported as one, not as TypeScript's.
    serde_json::from_str::<serde_json::Value>(&dashboard)
        .with_context(|| format!("{} is not JSON", path.display()))?;
    in_scratch_dir("grafana", |dir| {
        std::os::unix::fs::symlink(tools.join("node_modules"), dir.join("node_modules"))
            .context("cannot link node_modules into the work directory")?;
        std::fs::write(
            dir.join("dashboard.ts"),
            format!(
                "import type {{ Dashboard }} from '@grafana/schema';\n\n\
                 export const dashboard = {} satisfies Dashboard;\n",
                dashboard.trim_end()
            ),
        )
        .context("cannot write dashboard.ts")?;
        eprintln!(
            "==> tsc --noEmit --strict: deploy/grafana/callstats.json satisfies @grafana/schema {GRAFANA_SCHEMA_VERSION}'s Dashboard"
        );
        let checked = Command::new(tools.join("node_modules/.bin/tsc"))
            .current_dir(dir)
            .args([
                "--noEmit",
                "--strict",
                "--pretty",
                "false",
                "--moduleResolution",
                "bundler",
                "--module",
                "esnext",
                "--target",
                "es2022",
                "dashboard.ts",
            ])
            .status()
            .context("cannot run tsc")?;
        if !checked.success() {
            bail!(
                "the dashboard does not satisfy Grafana's Dashboard type (tsc's errors above; line numbers are the JSON's plus two)"
            );
        }
        Ok(())
    })
}
