//! What `serve` does with its database (docs/operations.md, "Storage"): it never creates a
//! SQLite file, answers 503 (data and `/readyz`) once the file is deleted under it, serves a
//! file it cannot write when persistence is off, and shows no secret of a URL in its errors.

use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::cli::assert_exit;
use crate::cli::service::{
    client, command, free_address, logs, server, spawn, terminate, wait_exit, wait_healthy,
    work_dir,
};
use crate::cli::{stderr, stdout};

/// `callstats serve` on `url` with an upstream nobody needs (the portal's endpoints only).
fn serve(dir: &Path, url: &str, address: &str) -> Command {
    let mut command = server(dir, "serve", address);
    command.args([
        "--database-url",
        url,
        "--call-platform-url",
        "http://127.0.0.1:9",
    ]);
    command
}

/// A SQLite portal `folder/portal.db` made as ops make one (`migrate`, `seed --demo`, `keys
/// create`, each a process that has ended): its URL and a key for the portal's endpoints.
fn prepared_portal(dir: &Path, folder: &Path) -> (String, String) {
    std::fs::create_dir_all(folder).unwrap();
    let url = format!("sqlite://{}", folder.join("portal.db").display());
    for args in [&["migrate"][..], &["seed", "--demo"]] {
        let output = command(dir, args)
            .args(["--database-url", &url])
            .output()
            .unwrap();
        assert_exit(&output, 0);
    }
    let output = command(dir, &["keys", "create", "--name", "ops"])
        .args(["--scopes", "operators,kpi:aggregate,scripts"])
        .args(["--database-url", &url])
        .output()
        .unwrap();
    assert_exit(&output, 0);
    (url, stdout(&output).trim().to_owned())
}

/// The names in `folder`, sorted.
fn files_in(folder: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(folder)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

async fn status(address: &str, path: &str, key: &str) -> u16 {
    client()
        .get(format!("http://{address}{path}"))
        .bearer_auth(key)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

#[test]
fn serve_refuses_a_missing_sqlite_file_with_exit_2_and_creates_none() {
    let dir = work_dir("missing-file");
    let path = dir.join("portal.db");
    let output = serve(
        &dir,
        &format!("sqlite://{}", path.display()),
        &free_address(),
    )
    .output()
    .unwrap();
    assert_exit(&output, 2);
    let message = stderr(&output);
    assert!(
        message.contains(&format!("no SQLite database at {}", path.display()))
            && message.contains("callstats migrate"),
        "{message}"
    );
    assert!(files_in(&dir).is_empty(), "{:?}", files_in(&dir));
    std::fs::remove_dir_all(dir).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sqlite_file_deleted_under_a_running_serve_gives_503_and_readyz_503_and_no_new_file() {
    let dir = work_dir("deleted-file");
    let folder = dir.join("data");
    let (url, key) = prepared_portal(&dir, &folder);
    let address = free_address();
    // Persistence on (the default): its read-write pool must not create the file either.
    let mut child = spawn(serve(&dir, &url, &address), &dir);
    wait_healthy(&address, &mut child, &dir).await;
    assert_eq!(status(&address, "/api/v1/operators", &key).await, 200);

    for name in files_in(&folder) {
        std::fs::remove_file(folder.join(name)).unwrap();
    }
    // Endpoints not asked before, so no cached answer stands in for the database.
    for path in ["/api/v1/kpi/months", "/api/v1/scripts/stats"] {
        assert_eq!(status(&address, path, &key).await, 503, "{path}");
    }
    assert_eq!(status(&address, "/readyz", "").await, 503);
    assert_eq!(status(&address, "/healthz", "").await, 200);
    assert!(files_in(&folder).is_empty(), "{:?}", files_in(&folder));

    terminate(&child);
    let status = wait_exit(&mut child, Duration::from_secs(30), &dir);
    assert_eq!(status.code(), Some(0), "logs:\n{}", logs(&dir));
    assert!(files_in(&folder).is_empty(), "{:?}", files_in(&folder));
    std::fs::remove_dir_all(dir).unwrap();
}

/// Makes `folder` and its files read-only (mode 555 and 444), or writable again.
fn set_read_only(folder: &Path, read_only: bool) {
    use std::os::unix::fs::PermissionsExt as _;
    let (folder_mode, file_mode) = if read_only {
        (0o555, 0o444)
    } else {
        (0o755, 0o644)
    };
    if !read_only {
        std::fs::set_permissions(folder, std::fs::Permissions::from_mode(folder_mode)).unwrap();
    }
    for name in files_in(folder) {
        let file: PathBuf = folder.join(name);
        std::fs::set_permissions(file, std::fs::Permissions::from_mode(file_mode)).unwrap();
    }
    if read_only {
        std::fs::set_permissions(folder, std::fs::Permissions::from_mode(folder_mode)).unwrap();
    }
}

/// Permissions do not stop root: as root, the command runs as `nobody` (65534), for whom the
/// read-only modes hold; as anyone else, it runs as that user.
fn unprivileged(mut command: Command) -> Command {
    if rustix::process::geteuid().is_root() {
        command.uid(65534).gid(65534);
    }
    command
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_sqlite_file_and_folder_are_served_with_persistence_off() {
    let dir = work_dir("read-only");
    let folder = dir.join("data");
    let (url, key) = prepared_portal(&dir, &folder);
    // The commands that made it have ended: only the file is left, in WAL mode, with no -shm
    // index beside it, which a reader would have to create.
    assert_eq!(files_in(&folder), ["portal.db"]);
    let read_only_serve = |address: &str| {
        let mut command = serve(&dir, &url, address);
        command.args(["--call-day-persist", "false"]);
        unprivileged(command)
    };

    // A journal left by a writer that did not stop cleanly holds what the snapshot would miss.
    std::fs::write(folder.join("portal.db-wal"), b"unsaved").unwrap();
    set_read_only(&folder, true);
    let refused = read_only_serve(&free_address()).output().unwrap();
    assert_exit(&refused, 2);
    assert!(
        stderr(&refused).contains("portal.db-wal holds transactions"),
        "{}",
        stderr(&refused)
    );
    set_read_only(&folder, false);
    std::fs::remove_file(folder.join("portal.db-wal")).unwrap();
    set_read_only(&folder, true);

    let refused = unprivileged(serve(&dir, &url, &free_address()))
        .output()
        .unwrap();
    assert_exit(&refused, 2);
    assert!(
        stderr(&refused).contains("--call-day-persist false"),
        "{}",
        stderr(&refused)
    );

    let address = free_address();
    let mut child = spawn(read_only_serve(&address), &dir);
    wait_healthy(&address, &mut child, &dir).await;
    assert_eq!(status(&address, "/readyz", "").await, 200);
    for path in ["/api/v1/operators", "/api/v1/kpi/months"] {
        assert_eq!(status(&address, path, &key).await, 200, "{path}");
    }
    terminate(&child);
    let status = wait_exit(&mut child, Duration::from_secs(30), &dir);
    assert_eq!(status.code(), Some(0), "logs:\n{}", logs(&dir));
    assert!(
        logs(&dir).contains("served read-only"),
        "logs:\n{}",
        logs(&dir)
    );
    assert_eq!(files_in(&folder), ["portal.db"]);
    set_read_only(&folder, false);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn serve_shows_no_secret_of_a_url_in_its_start_up_errors() {
    let dir = work_dir("url-secrets");
    for (platform, database, code, shown, secrets) in [
        (
            "http://u:S3cret@127.0.0.1:1",
            "sqlite://portal.db",
            2,
            "http://***@127.0.0.1:1/",
            &["S3cret", "u:"][..],
        ),
        (
            "http://127.0.0.1:1/?token=t0k3n",
            "sqlite://portal.db",
            2,
            "http://127.0.0.1:1/?token=***",
            &["t0k3n"],
        ),
        (
            "http://127.0.0.1:1",
            "postgres://app:S3cret@127.0.0.1:1/portal?sslpassword=k3y&PASSWORD=pw9",
            1,
            "postgres://***@127.0.0.1:1/portal?sslpassword=***&PASSWORD=***",
            &["S3cret", "k3y", "pw9", "app:"],
        ),
    ] {
        let output = command(&dir, &["serve", "--db-connect-timeout-secs", "1"])
            .env("CALLSTATS_CALL_PLATFORM_URL", platform)
            .env("CALLSTATS_DATABASE_URL", database)
            .output()
            .unwrap();
        assert_exit(&output, code);
        let message = stderr(&output);
        assert!(message.contains(shown), "{platform} {database}: {message}");
        for secret in secrets {
            assert!(!message.contains(secret), "{secret} shown: {message}");
        }
    }
    std::fs::remove_dir_all(dir).unwrap();
}
