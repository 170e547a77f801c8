//! Project automation, so a fresh machine needs only cargo and rustup:
//!
//!   cargo xtask serve [ARGS]
//!                       build the bundled plugins and `warden`, then run
//!                       `warden serve` on embedded defaults (default ARGS:
//!                       --http 127.0.0.1:7878)
//!   cargo xtask demo    build the bundled plugins and show calls with and
//!                       without grants on a scratch workspace
//!   cargo xtask test    the whole test suite (makes Docker available and
//!                       builds the sandbox images first)
//!   cargo xtask lint    rustfmt and clippy (-D warnings), host and guests
//!   cargo xtask plugins build the bundled plugins (release, wasm32-wasip2)
//!   cargo xtask install [PREFIX]
//!                       install a release `warden` as PREFIX/bin/warden and
//!                       the signed bundled plugins in
//!                       PREFIX/share/warden/plugins (default PREFIX:
//!                       ~/.local), so it serves them from any directory
//!   cargo xtask fuzz [SECONDS]
//!                       run each fuzz target (cargo-fuzz) for SECONDS (default 30)
//!   cargo xtask bench [--quick]
//!                       every benchmark (warden bench --mcp against a bare
//!                       rmcp server, warden bench --bridge against the
//!                       fixture MCP server, each crate's cargo bench) written to
//!                       docs/benchmarks.md, Docker and the sandbox
//!                       images made first; --quick: fewer iterations, no
//!                       Docker, no sandbox bench

mod bench;
mod bench_bridge;
mod demo;

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, bail};

fn main() -> anyhow::Result<()> {
    let task = std::env::args().nth(1).unwrap_or_default();
    let root = root()?;
    match task.as_str() {
        "demo" => demo::run(&root),
        "serve" => serve(&root, std::env::args().skip(2).collect()),
        "test" => test(&root),
        "lint" => lint(&root),
        "plugins" => plugins(&root).map(drop),
        "install" => install(&root, std::env::args().nth(2)),
        "fuzz" => fuzz(&root, std::env::args().nth(2).as_deref().unwrap_or("30")),
        "bench" => bench::run(&root, std::env::args().nth(2).as_deref() == Some("--quick")),
        _ => bail!(
            "usage: cargo xtask serve [ARGS]|demo|test|lint|plugins|install [PREFIX]|fuzz [SECONDS]|bench [--quick]"
        ),
    }
}

fn root() -> anyhow::Result<PathBuf> {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest
        .parent()
        .map(Path::to_path_buf)
        .context("xtask lives one level below the workspace root")
}

/// Runs a command in `dir`, echoing it; fails if it fails.
pub fn run(dir: &Path, program: &str, args: &[&str]) -> anyhow::Result<()> {
    run_env(dir, program, args, &[])
}

/// [`run`] with extra environment variables.
pub fn run_env(
    dir: &Path,
    program: &str,
    args: &[&str],
    env: &[(&str, &str)],
) -> anyhow::Result<()> {
    eprintln!("+ {program} {}", args.join(" "));
    let status = Command::new(program)
        .args(args)
        .envs(env.iter().copied())
        .current_dir(dir)
        .status()
        .with_context(|| format!("running {program}"))?;
    if !status.success() {
        bail!("`{program} {}` failed ({status})", args.join(" "));
    }
    Ok(())
}

/// Builds the bundled plugins and `warden`, then runs `warden serve` in
/// the repository root (state in `.warden/`, workspace in `workspace/`).
fn serve(root: &Path, args: Vec<String>) -> anyhow::Result<()> {
    let plugins = plugins(root)?;
    let args = if args.is_empty() {
        vec!["--http".to_owned(), "127.0.0.1:7878".to_owned()]
    } else {
        args
    };
    let mut full = vec!["serve".to_owned(), "--plugin-dir".to_owned()];
    full.push(
        plugins
            .to_str()
            .context("plugin path is not UTF-8")?
            .to_owned(),
    );
    full.extend(args);
    let refs: Vec<&str> = full.iter().map(String::as_str).collect();
    let warden = root.join("target/debug/warden");
    run(root, warden.to_str().context("path is not UTF-8")?, &refs)
}

/// A virtualenv under `target/` with the MCP Python SDK the MCP tests
/// drive Warden with, and kubernetes-validate for the deployment manifests
/// (`tests/mcp/requirements.txt`); created or updated
/// when the requirements changed. Returns its interpreter.
fn mcp_python(root: &Path) -> anyhow::Result<PathBuf> {
    let venv = root.join("target/mcp-venv");
    let python = venv.join("bin/python");
    let requirements = root.join("tests/mcp/requirements.txt");
    let wanted = std::fs::read_to_string(&requirements)
        .with_context(|| format!("reading {}", requirements.display()))?;
    let stamp = venv.join("requirements.installed");
    if python.exists() && std::fs::read_to_string(&stamp).ok().as_deref() == Some(&wanted) {
        return Ok(python);
    }
    let venv_str = venv.to_str().context("venv path is not UTF-8")?;
    run(root, "python3", &["-m", "venv", venv_str])?;
    let req = requirements.to_str().context("path is not UTF-8")?;
    let py = python.to_str().context("path is not UTF-8")?;
    run(
        root,
        py,
        &[
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "-r",
            req,
        ],
    )?;
    std::fs::write(&stamp, wanted)?;
    Ok(python)
}

/// `tests/mcp-ts/node_modules` with the MCP TypeScript SDK the MCP tests
/// drive Warden with (`tests/mcp-ts/package-lock.json`); `npm ci` runs
/// when it is missing or the lockfile changed. Returns that directory.
fn mcp_node(root: &Path) -> anyhow::Result<PathBuf> {
    let dir = root.join("tests/mcp-ts");
    let modules = dir.join("node_modules");
    let lockfile = dir.join("package-lock.json");
    let wanted = std::fs::read_to_string(&lockfile)
        .with_context(|| format!("reading {}", lockfile.display()))?;
    let stamp = modules.join(".warden-lock.installed");
    if std::fs::read_to_string(&stamp).ok().as_deref() == Some(&wanted) {
        return Ok(modules);
    }
    let has_npm = Command::new("npm")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_npm {
        // Debian's packages, as scripts/ensure-docker installs the engine.
        run(root, "apt-get", &["update", "-q"])?;
        run(root, "apt-get", &["install", "-y", "-q", "nodejs", "npm"])?;
    }
    run(&dir, "npm", &["ci", "--no-audit", "--no-fund"])
        .context("installing the MCP TypeScript SDK needs Node.js and npm")?;
    std::fs::write(&stamp, wanted)?;
    Ok(modules)
}

/// A headless Chromium for the console's browser test: Debian's
/// `chromium` package, installed when missing (as `scripts/ensure-docker`
/// installs the engine). Returns its path.
fn chromium(root: &Path) -> anyhow::Result<PathBuf> {
    let found = || {
        ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
            .into_iter()
            .map(PathBuf::from)
            .find(|p| p.exists())
    };
    if let Some(path) = found() {
        return Ok(path);
    }
    run(root, "apt-get", &["update", "-q"])?;
    run(root, "apt-get", &["install", "-y", "-q", "chromium"])
        .context("the console's browser test needs Debian's chromium package")?;
    found().context("chromium was installed but /usr/bin/chromium is missing")
}

/// Makes sure the wasm32-wasip2 target is installed for this toolchain.
pub fn ensure_wasm_target(root: &Path) -> anyhow::Result<()> {
    let installed = Command::new("rustup")
        .args(["target", "list", "--installed"])
        .current_dir(root)
        .output()
        .context("running rustup: install rustup from your package manager or rustup.rs")?;
    if !String::from_utf8_lossy(&installed.stdout)
        .lines()
        .any(|l| l.trim() == "wasm32-wasip2")
    {
        run(root, "rustup", &["target", "add", "wasm32-wasip2"])?;
    }
    Ok(())
}

/// Builds the bundled plugins; returns the directory holding the `.wasm` files.
pub fn plugins(root: &Path) -> anyhow::Result<PathBuf> {
    ensure_wasm_target(root)?;
    // Run in the plugins' directory, so their `.cargo/config.toml` (the
    // linker flags) applies.
    run(
        &root.join("plugins"),
        "cargo",
        &["build", "--target", "wasm32-wasip2", "--release"],
    )?;
    let dir = root.join("plugins/target/wasm32-wasip2/release");
    sign_bundled(root, &dir)?;
    Ok(dir)
}

/// Installs a release `warden` and the signed bundled plugins under
/// `prefix` (default `~/.local`): `bin/warden` and
/// `share/warden/plugins/`, where the binary looks for them.
fn install(root: &Path, prefix: Option<String>) -> anyhow::Result<()> {
    let prefix = match prefix {
        Some(p) => PathBuf::from(p),
        None => PathBuf::from(std::env::var_os("HOME").context("HOME is not set; name a PREFIX")?)
            .join(".local"),
    };
    let plugins_dir = plugins(root)?;
    run(
        root,
        "cargo",
        &["build", "--release", "--package", "warden"],
    )?;
    let bin = prefix.join("bin");
    let share = prefix.join("share/warden/plugins");
    std::fs::create_dir_all(&bin).with_context(|| format!("creating {}", bin.display()))?;
    std::fs::create_dir_all(&share).with_context(|| format!("creating {}", share.display()))?;
    // Replace, never write into, a binary that may be running.
    let staged = bin.join(".warden.new");
    std::fs::copy(root.join("target/release/warden"), &staged)
        .with_context(|| format!("copying warden to {}", staged.display()))?;
    std::fs::rename(&staged, bin.join("warden"))?;
    let mut copied = 0;
    for entry in std::fs::read_dir(&plugins_dir)? {
        let path = entry?.path();
        let bundled = path.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
            n.ends_with(".wasm") || n.ends_with(".wasm.sig") || n == "warden-dev.pub"
        });
        if bundled && path.is_file() {
            let name = path.file_name().context("plugin file name")?;
            std::fs::copy(&path, share.join(name))
                .with_context(|| format!("copying {}", path.display()))?;
            copied += 1;
        }
    }
    println!(
        "installed {} and {copied} plugin files in {}",
        bin.join("warden").display(),
        share.display()
    );
    Ok(())
}

/// Signs every bundled plugin in `dir` with the signing key: the file
/// `WARDEN_SIGNING_KEY` names, else a development key made once per
/// checkout in `target/dev-key/` (never committed). Its public half goes
/// beside the plugins as `warden-dev.pub`, which `warden serve`'s embedded
/// defaults admit by name, and `--signers DIR/warden-dev.pub` names
/// explicitly.
fn sign_bundled(root: &Path, dir: &Path) -> anyhow::Result<()> {
    run(root, "cargo", &["build", "--package", "warden"])?;
    let warden = root.join("target/debug/warden");
    let warden = warden.to_str().context("path is not UTF-8")?;
    let key = match std::env::var_os("WARDEN_SIGNING_KEY") {
        Some(k) => PathBuf::from(k),
        None => {
            let key = root.join("target/dev-key/warden-dev.key");
            if !key.is_file() {
                std::fs::create_dir_all(root.join("target/dev-key"))?;
                run(
                    root,
                    warden,
                    &[
                        "keygen",
                        "--out",
                        key.to_str().context("path is not UTF-8")?,
                    ],
                )?;
            }
            key
        }
    };
    let key_str = key.to_str().context("key path is not UTF-8")?;
    let mut public = key.clone().into_os_string();
    public.push(".pub");
    std::fs::copy(&public, dir.join("warden-dev.pub"))
        .with_context(|| format!("copying {}", PathBuf::from(&public).display()))?;
    let mut wasm: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "wasm"))
        .collect();
    wasm.sort();
    for file in wasm {
        let file = file.to_str().context("plugin path is not UTF-8")?;
        run(root, warden, &["sign", file, "--key", key_str])?;
    }
    Ok(())
}

fn has_nextest(root: &Path) -> bool {
    Command::new("cargo")
        .args(["nextest", "--version"])
        .current_dir(root)
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Makes a Docker engine answer (`scripts/ensure-docker`: installs and
/// starts Debian's docker.io when it can, else says what to install) and
/// builds the sandbox images with `warden` (instant when their recipes
/// are unchanged). The sandbox tests and benchmarks run against them;
/// they are never skipped.
pub(crate) fn sandbox_images(root: &Path, warden: &Path) -> anyhow::Result<()> {
    run(root, "bash", &["scripts/ensure-docker"])?;
    run(
        root,
        warden.to_str().context("path is not UTF-8")?,
        &[
            "sandbox",
            "build-images",
            "--work-dir",
            "target/sandbox-image-build",
        ],
    )
}

fn test(root: &Path) -> anyhow::Result<()> {
    ensure_wasm_target(root)?;
    run(root, "cargo", &["build", "--package", "warden"])?;
    sandbox_images(root, &root.join("target/debug/warden"))?;
    // The store conformance suite and the PostgreSQL host tests make
    // their databases in one private loopback cluster, started here once
    // (installing Debian's postgresql when it can) so a missing server
    // fails the run at once, naming what to install.
    run(root, "bash", &["scripts/ensure-postgres"])?;
    let python = mcp_python(root)?;
    let python = python
        .to_str()
        .context("venv path is not UTF-8")?
        .to_owned();
    let node_modules = mcp_node(root)?;
    let node_modules = node_modules
        .to_str()
        .context("node_modules path is not UTF-8")?
        .to_owned();
    let chromium = chromium(root)?;
    let chromium = chromium
        .to_str()
        .context("chromium path is not UTF-8")?
        .to_owned();
    let env = [
        ("WARDEN_TEST_PYTHON", python.as_str()),
        ("WARDEN_TEST_NODE_MODULES", node_modules.as_str()),
        ("WARDEN_TEST_CHROMIUM", chromium.as_str()),
    ];
    if has_nextest(root) {
        run_env(
            root,
            "cargo",
            &["nextest", "run", "--workspace", "--no-fail-fast"],
            &env,
        )?;
        // nextest does not run doctests.
        run(root, "cargo", &["test", "--workspace", "--doc"])
    } else {
        eprintln!("cargo-nextest not found; using cargo test");
        run_env(
            root,
            "cargo",
            &["test", "--workspace", "--no-fail-fast"],
            &env,
        )
    }
}

/// Runs every fuzz target for `seconds` each, installing cargo-fuzz if it
/// is missing. Sanitizer flags are nightly-only; RUSTC_BOOTSTRAP lets the
/// pinned stable toolchain accept them, so no second toolchain is needed.
fn fuzz(root: &Path, seconds: &str) -> anyhow::Result<()> {
    let seconds: u32 = seconds
        .parse()
        .context("fuzz SECONDS must be a whole number")?;
    let has_fuzz = Command::new("cargo")
        .args(["fuzz", "--version"])
        .current_dir(root)
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_fuzz {
        run(root, "cargo", &["install", "cargo-fuzz", "--locked"])?;
    }
    let fuzz_dir = root.join("fuzz");
    for target in ["shell", "rules"] {
        let time = format!("-max_total_time={seconds}");
        eprintln!("+ cargo fuzz run {target} -- {time}");
        let status = Command::new("cargo")
            .args(["fuzz", "run", target, "--", &time, "-max_len=512"])
            .current_dir(&fuzz_dir)
            .env("RUSTC_BOOTSTRAP", "1")
            .status()
            .context("running cargo fuzz")?;
        if !status.success() {
            bail!("fuzz target `{target}` found a failure (see fuzz/artifacts/{target})");
        }
    }
    Ok(())
}

/// The nested workspaces of guest crates.
const GUEST_WORKSPACES: [&str; 3] = [
    "plugins/Cargo.toml",
    "tests/components/Cargo.toml",
    "examples/Cargo.toml",
];

fn lint(root: &Path) -> anyhow::Result<()> {
    ensure_wasm_target(root)?;
    run(root, "cargo", &["fmt", "--all", "--check"])?;
    run(
        root,
        "cargo",
        &[
            "fmt",
            "--manifest-path",
            "fuzz/Cargo.toml",
            "--all",
            "--check",
        ],
    )?;
    for manifest in GUEST_WORKSPACES {
        run(
            root,
            "cargo",
            &["fmt", "--manifest-path", manifest, "--all", "--check"],
        )?;
    }
    run(
        root,
        "cargo",
        &[
            "clippy",
            "--workspace",
            "--all-targets",
            "--",
            "-D",
            "warnings",
        ],
    )?;
    for manifest in GUEST_WORKSPACES {
        run(
            root,
            "cargo",
            &[
                "clippy",
                "--manifest-path",
                manifest,
                "--target",
                "wasm32-wasip2",
                "--",
                "-D",
                "warnings",
            ],
        )?;
    }
    // The fuzz crate is its own workspace: lint it here so an API change
    // that breaks a target fails in seconds, not after the fuzz build.
    run(
        root,
        "cargo",
        &[
            "clippy",
            "--manifest-path",
            "fuzz/Cargo.toml",
            "--",
            "-D",
            "warnings",
        ],
    )?;
    Ok(())
}
