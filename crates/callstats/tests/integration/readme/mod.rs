//! The README's "What a partner does" walk-through works as written: its `$ ` commands, run in
//! order in one `sh` (so that variables and files carry over, as in a terminal) with `KEY` and
//! `BASE` set to a spawned `callstats demo`'s, each exit 0 and print what the README shows under
//! them, modulo what varies (numbers, the ETag, the order of headers); and they do what its prose
//! says: the first fetch answers 200 with a weak `ETag` and both `RateLimit` headers, the
//! `If-None-Match` poll 304 with that `ETag` and no body, the `--compressed` one 200 in gzip, and
//! the last one, past the quota, 429 with `Retry-After`. Needs `curl` on the `PATH`.

use std::collections::BTreeMap;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::support::demo::Demo;

/// The section whose commands run.
const SECTION: &str = "## What a partner does";

/// How long the whole walk-through may take (each curl also gives up after 20 seconds).
const RUN_WITHIN: Duration = Duration::from_secs(120);

/// The seconds of a clock minute the walk-through needs: its burst must exhaust the quota and
/// meet the 429 within one window.
const NEEDS_SECONDS_OF_THE_MINUTE: u64 = 30;

/// Ends the output of each command in the script's stdout: `MARK <index> <exit status>`.
const MARK: &str = "@@ readme step";

/// One `$ ` command of the section and the lines the README shows under it.
#[derive(Debug)]
struct Step {
    command: String,
    shown: Vec<String>,
}

/// What one command printed (blank lines and `\r` dropped) and its exit status.
#[derive(Debug, Default)]
struct Ran {
    lines: Vec<String>,
    status: Option<i32>,
}

fn readme_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md")
}

/// The `$ ` commands of the section's ```console blocks, in order, with their shown output.
fn steps(readme: &str) -> Vec<Step> {
    let mut lines = readme.lines().skip_while(|line| line.trim_end() != SECTION);
    assert!(
        lines.next().is_some(),
        "README.md has no section {SECTION:?}"
    );
    let (mut steps, mut fence, mut console) = (Vec::<Step>::new(), false, false);
    for line in lines.take_while(|line| !line.starts_with("## ")) {
        if let Some(info) = line.strip_prefix("```") {
            console = !fence && info.trim() == "console";
            fence = !fence;
            continue;
        }
        if !console || line.trim().is_empty() {
            continue;
        }
        if let Some(command) = line.strip_prefix("$ ") {
            steps.push(Step {
                command: command.to_owned(),
                shown: Vec::new(),
            });
        } else {
            steps
                .last_mut()
                .unwrap_or_else(|| panic!("output before any command in {SECTION}: {line:?}"))
                .shown
                .push(line.to_owned());
        }
    }
    assert!(!fence, "an unclosed ``` block in {SECTION}");
    steps
}

/// A line with what varies from run to run made uniform: a weak ETag's digits become `ETAG`,
/// every run of decimal digits `N`, every run of blanks one space.
fn shape(line: &str) -> String {
    let mut line = line.trim().to_owned();
    let mut from = 0;
    while let Some(at) = line.get(from..).and_then(|rest| rest.find("W/\"")) {
        let start = from + at + 3;
        let hex = line
            .get(start..)
            .unwrap_or_default()
            .chars()
            .take_while(char::is_ascii_hexdigit)
            .count();
        line.replace_range(start..start + hex, "ETAG");
        from = start + 4;
    }
    let mut out = String::new();
    let (mut digits, mut blank) = (false, false);
    for c in line.chars() {
        if c.is_ascii_digit() {
            if !digits {
                out.push('N');
            }
        } else if c.is_whitespace() {
            if !blank {
                out.push(' ');
            }
        } else {
            out.push(c);
        }
        digits = c.is_ascii_digit();
        blank = c.is_whitespace();
    }
    out
}

/// The script that runs every command in one shell, each followed by its mark.
fn script(steps: &[Step]) -> String {
    steps
        .iter()
        .enumerate()
        .map(|(index, step)| {
            format!(
                "{}\nprintf '\\n{MARK} {index} %s\\n' \"$?\"\n",
                step.command
            )
        })
        .collect()
}

/// Splits the script's stdout at the marks: what each command printed and its exit status.
fn split(stdout: &str, count: usize) -> Vec<Ran> {
    let mut ran: Vec<Ran> = std::iter::repeat_with(Ran::default).take(count).collect();
    let mut lines = Vec::new();
    for line in stdout.lines().map(|line| line.trim_end_matches('\r')) {
        if let Some(mark) = line.strip_prefix(MARK) {
            let (index, status) = mark.trim().split_once(' ').unwrap();
            let step = &mut ran[index.parse::<usize>().unwrap()];
            step.lines = std::mem::take(&mut lines);
            step.status = Some(status.parse().unwrap());
        } else if !line.trim().is_empty() {
            lines.push(line.to_owned());
        }
    }
    ran
}

/// The status code of the `HTTP/…` line among `lines`, if any.
fn status(lines: &[String]) -> Option<u16> {
    lines
        .iter()
        .find(|line| line.starts_with("HTTP/"))
        .and_then(|line| line.split_whitespace().nth(1))
        .map(|code| code.parse().unwrap())
}

/// The value of header `name` among `lines` (`name: value`, name case-insensitive).
fn header<'a>(lines: &'a [String], name: &str) -> Option<&'a str> {
    lines.iter().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        key.eq_ignore_ascii_case(name).then_some(value.trim())
    })
}

/// Whether `value` is `prefix` then `;`-separated `k=<digits>` for each of `keys`, in order.
fn is_params(value: &str, prefix: &str, keys: &[&str]) -> bool {
    let Some(params) = value.strip_prefix(prefix) else {
        return false;
    };
    let params: Vec<&str> = params.split(';').collect();
    params.len() == keys.len()
        && params.iter().zip(keys).all(|(param, key)| {
            param
                .strip_prefix(key)
                .and_then(|p| p.strip_prefix('='))
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        })
}

fn is_weak_etag(value: &str) -> bool {
    value
        .strip_prefix("W/\"")
        .and_then(|rest| rest.strip_suffix('"'))
        .is_some_and(|hex| {
            hex.len() == 16
                && hex
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        })
}

/// Waits, if needed, for a clock minute with `NEEDS_SECONDS_OF_THE_MINUTE` seconds left.
fn wait_for_room_in_the_minute() {
    let second = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
        % 60;
    if 60 - second < NEEDS_SECONDS_OF_THE_MINUTE {
        std::thread::sleep(Duration::from_secs(61 - second));
    }
}

/// Runs `script` with `sh` in `dir`; its stdout and stderr.
fn run(script: &str, dir: &Path, demo: &Demo) -> (String, String) {
    // The walk-through's curl with a time limit and no user settings: a `.curlrc` of our own.
    std::fs::write(dir.join(".curlrc"), "max-time = 20\n").unwrap();
    let mut child = Command::new("sh")
        .args(["-c", script])
        .current_dir(dir)
        .env("KEY", &demo.key)
        .env("BASE", format!("{}/api/v1", demo.base()))
        .env("CURL_HOME", dir)
        .env("LC_ALL", "C")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut text = String::new();
        stdout.read_to_string(&mut text).unwrap();
        text
    });
    let err = std::thread::spawn(move || {
        let mut text = String::new();
        stderr.read_to_string(&mut text).unwrap();
        text
    });
    let deadline = Instant::now() + RUN_WITHIN;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the walk-through still ran after {RUN_WITHIN:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    (out.join().unwrap(), err.join().unwrap())
}

#[test]
fn shape_keeps_the_words_and_drops_what_varies() {
    assert_eq!(
        shape(r#"etag: W/"77170bbf7863dc1e""#),
        shape(r#"etag: W/"0a1b2c3d4e5f6789""#)
    );
    assert_eq!(shape(r#"etag: W/"77170bbf7863dc1e""#), r#"etag: W/"ETAG""#);
    assert_eq!(shape("    117 200"), "N N");
    assert_eq!(
        shape(r#"ratelimit: "minute";r=0;t=46"#),
        r#"ratelimit: "minute";r=N;t=N"#
    );
    assert_ne!(shape("HTTP/1.1 200 OK"), shape("HTTP/1.1 304 Not Modified"));
}

#[test]
fn steps_reads_the_commands_of_the_console_blocks_of_the_section() {
    let readme = "## Before\n```console\n$ no\n```\n## What a partner does\nText.\n\n\
                  ```console\n$ one\nout 1\n\nout 2\n$ two\n```\n```sh\n$ not this\n```\n\
                  ```console\n$ three\nout 3\n```\n## After\n```console\n$ no\n```\n";
    let steps = steps(readme);
    let got: Vec<(&str, Vec<&str>)> = steps
        .iter()
        .map(|s| {
            (
                s.command.as_str(),
                s.shown.iter().map(String::as_str).collect(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("one", vec!["out 1", "out 2"]),
            ("two", vec![]),
            ("three", vec!["out 3"])
        ]
    );
}

#[test]
fn the_partner_walkthrough_in_the_readme_runs_as_shown() {
    let curl = Command::new("curl").arg("--version").output();
    assert!(
        curl.is_ok_and(|out| out.status.success()),
        "this test runs the README's curl commands: install curl (and sh) to run it"
    );
    let readme = std::fs::read_to_string(readme_path()).unwrap();
    let steps = steps(&readme);
    let find = |what: &str| {
        steps
            .iter()
            .position(|step| step.command.contains(what))
            .unwrap_or_else(|| panic!("no command of {SECTION} uses {what}: {steps:#?}"))
    };
    let (conditional, compressed) = (find("If-None-Match"), find("--compressed"));

    let demo = Demo::start("readme", |_, _| {});
    let dir = demo.dir.join("partner");
    std::fs::create_dir_all(&dir).unwrap();
    wait_for_room_in_the_minute();
    let (stdout, stderr) = run(&script(&steps), &dir, &demo);
    let ran = split(&stdout, steps.len());
    let context = |index: usize| {
        format!(
            "$ {}\nREADME shows:\n{}\nit printed:\n{}\nstderr:\n{stderr}\ndemo logs:\n{}",
            steps[index].command,
            steps[index].shown.join("\n"),
            ran[index].lines.join("\n"),
            demo.log_text()
        )
    };

    // Each command ran, succeeded and printed what the README shows, as far as it can be.
    for (index, (step, ran)) in steps.iter().zip(&ran).enumerate() {
        assert_eq!(
            ran.status,
            Some(0),
            "failed or never ran:\n{}",
            context(index)
        );
        let count = |lines: &[String]| {
            let mut shapes = BTreeMap::<String, usize>::new();
            for line in lines {
                *shapes.entry(shape(line)).or_default() += 1;
            }
            shapes
        };
        assert_eq!(
            count(&step.shown),
            count(&ran.lines),
            "does not print what the README shows:\n{}",
            context(index)
        );
    }

    // The first fetch: 200 with a weak ETag and both RateLimit headers, each with the request
    // quota ("minute") and the key's day budget ("days").
    let first = ran
        .iter()
        .position(|ran| status(&ran.lines).is_some())
        .unwrap_or_else(|| panic!("no command of {SECTION} shows a status line: {steps:#?}"));
    let lines = &ran[first].lines;
    assert_eq!(status(lines), Some(200), "{}", context(first));
    let etag = header(lines, "etag").unwrap_or_else(|| panic!("no ETag:\n{}", context(first)));
    assert!(
        is_weak_etag(etag),
        "{etag:?} is no weak ETag:\n{}",
        context(first)
    );
    let items = |name| {
        header(lines, name)
            .map(|v| v.split(", ").collect::<Vec<_>>())
            .unwrap_or_default()
    };
    let policy = items("ratelimit-policy");
    assert!(
        matches!(policy[..], [minute, days]
            if is_params(minute, "\"minute\";", &["q", "w"]) && minute.ends_with(";w=60")
                && is_params(days, "\"days\";", &["q", "w"]) && days.ends_with(";w=60")),
        "no RateLimit-Policy \"minute\";q=…;w=60, \"days\";q=…;w=60:\n{}",
        context(first)
    );
    assert!(
        matches!(items("ratelimit")[..], [minute, days]
            if is_params(minute, "\"minute\";", &["r", "t"])
                && is_params(days, "\"days\";", &["r", "t"])),
        "no RateLimit \"minute\";r=…;t=…, \"days\";r=…;t=…:\n{}",
        context(first)
    );

    // The next poll, with If-None-Match: 304, the same ETag, no body.
    let lines = &ran[conditional].lines;
    assert_eq!(status(lines), Some(304), "{}", context(conditional));
    assert_eq!(
        header(lines, "etag"),
        Some(etag),
        "{}",
        context(conditional)
    );
    assert_eq!(
        header(lines, "body"),
        Some("0 bytes"),
        "a body came with the 304:\n{}",
        context(conditional)
    );

    // Asked for gzip: gzip.
    let lines = &ran[compressed].lines;
    assert_eq!(status(lines), Some(200), "{}", context(compressed));
    assert_eq!(
        header(lines, "content-encoding"),
        Some("gzip"),
        "{}",
        context(compressed)
    );

    // Past the quota: 429 with Retry-After, nothing left.
    let last = ran.len() - 1;
    let lines = &ran[last].lines;
    assert_eq!(status(lines), Some(429), "{}", context(last));
    assert!(
        header(lines, "retry-after").is_some_and(|v| v.parse::<u32>().is_ok()),
        "no Retry-After:\n{}",
        context(last)
    );
    assert!(
        header(lines, "ratelimit").is_some_and(|v| v.starts_with("\"minute\";r=0;")),
        "{}",
        context(last)
    );
}
