//! `desktop_*`: a stateful X session (Xvfb, xdotool, scrot) in the
//! agent's warm desktop container. The session lives as long as the
//! container: a call that finds no running program (the container was
//! reset, per-call strategy, the program exited) fails with
//! `app_not_running`, never with an empty capture.

use serde_json::{Value, json};
use warden_api::{BackendCall, ErrorType};

use super::{Failure, Outcome, SandboxTools, arg, in_workspace, saved_file, tails, text};
use crate::images::ImageKind;
use crate::sandbox::RunOutput;

/// Exit code of the scripts when no program is running.
const NOT_RUNNING: i64 = 86;

const LAUNCH: &str = r#"export DISPLAY=:99
S=/tmp/.desktop; mkdir -p $S "$HOME"
if ! pgrep -x Xvfb >/dev/null; then
    rm -f /tmp/.X99-lock /tmp/.X11-unix/X99
    setsid Xvfb :99 -screen 0 1024x768x24 -nolisten tcp >$S/xvfb.log 2>&1 </dev/null &
    i=0
    until xdotool getmouselocation >/dev/null 2>&1; do
        i=$((i+1)); if [ $i -gt 100 ]; then cat $S/xvfb.log >&2; echo "Xvfb did not start" >&2; exit 1; fi
        sleep 0.1
    done
fi
if [ -f $S/app.pid ]; then kill "$(cat $S/app.pid)" 2>/dev/null; rm -f $S/app.pid; sleep 0.2; fi
xdotool search --onlyvisible --classname . 2>/dev/null >$S/before || true
setsid sh -c 'echo $$ > /tmp/.desktop/app.pid; exec "$@"' app "$@" >$S/app.log 2>&1 </dev/null &
i=0
while [ ! -s $S/app.pid ]; do i=$((i+1)); [ $i -gt 50 ] && break; sleep 0.1; done
pid=$(cat $S/app.pid)
i=0
w=
while [ -z "$w" ]; do
    kill -0 "$pid" 2>/dev/null || { cat $S/app.log >&2; echo "the program exited" >&2; exit 1; }
    w=$(xdotool search --onlyvisible --pid "$pid" 2>/dev/null | head -1)
    # Toolkits that set no _NET_WM_PID (Tk): the window that was not there before.
    [ -n "$w" ] || w=$(xdotool search --onlyvisible --classname . 2>/dev/null | grep -vxF -f $S/before | head -1)
    i=$((i+1)); if [ $i -gt 200 ]; then cat $S/app.log >&2; echo "the program showed no window" >&2; exit 1; fi
    [ -n "$w" ] || sleep 0.1
done
xdotool mousemove --window "$w" 20 20 windowfocus --sync "$w" 2>/dev/null || xdotool windowfocus "$w"
echo "$w"
"#;

/// Prepended to every other desktop action: refuse when no program runs.
const CHECK: &str = r#"export DISPLAY=:99
S=/tmp/.desktop
if ! { [ -f $S/app.pid ] && kill -0 "$(cat $S/app.pid)" 2>/dev/null && pgrep -x Xvfb >/dev/null; }; then
    echo "app not running" >&2; exit 86
fi
"#;

pub(super) async fn launch(tools: &SandboxTools, call: &BackendCall<'_>) -> Outcome {
    let app = arg(call, "app")?;
    let mut argv = vec![
        "/bin/sh".to_owned(),
        "-c".to_owned(),
        LAUNCH.to_owned(),
        "desktop".to_owned(),
        app.to_owned(),
    ];
    if let Some(args) = call.args.get("args").and_then(Value::as_array) {
        argv.extend(args.iter().filter_map(Value::as_str).map(str::to_owned));
    }
    let out = tools
        .run(call, ImageKind::Desktop, argv, None, None)
        .await?;
    if out.output.exit_code != Some(0) {
        return Err(Failure::new(
            ErrorType::ToolError,
            "launch_failed",
            format!("`{app}` did not start: {}", tails(&out.output)),
        ));
    }
    Ok(
        json!({"app": app, "window": text(&out.output.stdout).trim(), "strategy": out.strategy.as_str()}),
    )
}

pub(super) async fn act(tools: &SandboxTools, call: &BackendCall<'_>) -> Outcome {
    let num = |k: &str, d: u64| {
        call.args
            .get(k)
            .and_then(Value::as_u64)
            .unwrap_or(d)
            .to_string()
    };
    let (script, args): (&str, Vec<String>) = match call.tool.name.as_str() {
        "desktop_click" => (
            "xdotool mousemove --sync \"$1\" \"$2\" click \"$3\"",
            vec![num("x", 0), num("y", 0), num("button", 1)],
        ),
        "desktop_type" => (
            "xdotool type --delay 40 -- \"$1\"",
            vec![arg(call, "text")?.to_owned()],
        ),
        "desktop_key" => {
            let keys: Vec<String> = arg(call, "keys")?
                .split_whitespace()
                .map(str::to_owned)
                .collect();
            if keys.iter().any(|k| {
                !k.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '+')
            }) {
                return Err(Failure::args(
                    "`keys` are xdotool key names like ctrl+s or Return",
                ));
            }
            ("xdotool key --delay 40 -- \"$@\"", keys)
        }
        "desktop_scroll" => {
            let button = match call.args.get("direction").and_then(Value::as_str) {
                Some("up") => "4",
                _ => "5",
            };
            (
                "xdotool click --repeat \"$2\" \"$1\"",
                vec![button.to_owned(), num("amount", 3)],
            )
        }
        "desktop_screenshot" => {
            let rel = arg(call, "path")?;
            let dest = in_workspace(call, rel, true)?;
            let script = "d=$(mktemp -d) && scrot -o \"$d/s.png\" && test -s \"$d/s.png\" && mkdir -p \"$(dirname \"$1\")\" \
                          && cp \"$d/s.png\" \"$1\" && sha256sum \"$1\" | cut -d' ' -f1 && stat -c %s \"$1\"; rc=$?; rm -rf \"$d\"; exit $rc";
            let out = run(tools, call, script, vec![dest]).await?;
            let (sha, bytes) = saved_file(&text(&out.output.stdout))?;
            return Ok(json!({"path": rel, "sha256": sha, "bytes": bytes}));
        }
        other => {
            return Err(Failure::new(
                ErrorType::UnknownTool,
                "not_found",
                format!("no desktop tool `{other}`"),
            ));
        }
    };
    run(tools, call, script, args).await?;
    Ok(json!({"done": call.tool.name.as_str()}))
}

async fn run(
    tools: &SandboxTools,
    call: &BackendCall<'_>,
    script: &str,
    args: Vec<String>,
) -> Result<RunOutput, Failure> {
    let mut argv = vec![
        "/bin/sh".to_owned(),
        "-c".to_owned(),
        format!("{CHECK}{script}"),
        "desktop".to_owned(),
    ];
    argv.extend(args);
    let out = tools
        .run(call, ImageKind::Desktop, argv, None, None)
        .await?;
    match out.output.exit_code {
        Some(0) => Ok(out),
        Some(NOT_RUNNING) => Err(Failure::new(
            ErrorType::ToolError,
            "app_not_running",
            "app not running: no desktop program is running in this sandbox (the container was reset \
             or the program exited); call desktop_launch first",
        )),
        _ => Err(Failure::new(
            ErrorType::ToolError,
            "desktop_failed",
            format!("`{}` failed: {}", call.tool.name, tails(&out.output)),
        )),
    }
}
