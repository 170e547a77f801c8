//! `browser_navigate`, `browser_screenshot`, `browser_diff` and
//! `browser_accessibility_scan`: headless chromium in the browser image.
//! Chromium's own sandbox needs privileges the container does not give
//! (`--no-sandbox`); the container is the sandbox.

use serde_json::{Value, json};
use warden_api::{BackendCall, ErrorType};

use super::{Failure, Outcome, SandboxTools, arg, check_exit, in_workspace, saved_file, text};
use crate::images::ImageKind;
use crate::pixels::{Rgba, diff as image_diff};

/// Runs chromium with a fresh profile; `$URL` and the mode's extra
/// arguments come in as positional parameters, never as shell text.
const CHROMIUM: &str = r#"d=$(mktemp -d) || exit 1
mkdir -p "$HOME"
mode=$1; shift
run() {
    chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run \
        --disable-dev-shm-usage --user-data-dir="$d/profile" "$@" 2>"$d/log"
}
case $mode in
dom) run --dump-dom "$1" >"$d/dom" ;;
shot) run --window-size="$2,$3" --screenshot="$d/shot.png" "$1" >/dev/null ;;
esac
rc=$?
case $mode in
dom)
    if [ $rc -ne 0 ] || [ ! -s "$d/dom" ]; then cat "$d/log" >&2; echo "chromium rendered nothing" >&2; rm -rf "$d"; exit 1; fi
    if [ "$2" = a11y ]; then python3 /opt/warden/a11y.py <"$d/dom"; else cat "$d/dom"; fi ;;
shot)
    if [ ! -s "$d/shot.png" ]; then cat "$d/log" >&2; echo "chromium wrote no screenshot" >&2; rm -rf "$d"; exit 1; fi
    mkdir -p "$(dirname "$4")" && cp "$d/shot.png" "$4" && sha256sum "$4" | cut -d' ' -f1 && stat -c %s "$4" ;;
esac
rc=$?
rm -rf "$d"
exit $rc
"#;

fn url(call: &BackendCall<'_>) -> Result<String, Failure> {
    let url = arg(call, "url")?;
    let scheme = url.split_once(':').map(|(s, _)| s.to_ascii_lowercase());
    match scheme.as_deref() {
        Some("http" | "https" | "file" | "data") => Ok(url.to_owned()),
        _ => Err(Failure::args(format!(
            "`{url}`: only http, https, file and data URLs can be opened"
        ))),
    }
}

fn chromium(mode: &str, rest: &[&str]) -> Vec<String> {
    let mut argv = vec![
        "/bin/sh".to_owned(),
        "-c".to_owned(),
        CHROMIUM.to_owned(),
        "browser".to_owned(),
        mode.to_owned(),
    ];
    argv.extend(rest.iter().map(|s| (*s).to_owned()));
    argv
}

pub(super) async fn navigate(tools: &SandboxTools, call: &BackendCall<'_>) -> Outcome {
    let url = url(call)?;
    let out = tools
        .run(
            call,
            ImageKind::Browser,
            chromium("dom", &[&url]),
            None,
            None,
        )
        .await?;
    check_exit(&out, "rendering the page")?;
    let dom = text(&out.output.stdout);
    Ok(json!({
        "url": url,
        "title": title(&dom),
        "dom": dom,
        "dom_bytes": out.output.stdout_total,
        "truncated": out.output.truncated(),
    }))
}

fn title(dom: &str) -> String {
    let lower = dom.to_ascii_lowercase();
    lower
        .find("<title")
        .and_then(|i| Some((i, lower[i..].find('>')? + i + 1)))
        .and_then(|(_, start)| Some((start, lower[start..].find("</title>")? + start)))
        .map(|(s, e)| dom[s..e].trim().to_owned())
        .unwrap_or_default()
}

pub(super) async fn screenshot(tools: &SandboxTools, call: &BackendCall<'_>) -> Outcome {
    let url = url(call)?;
    let rel = arg(call, "path")?;
    let dest = in_workspace(call, rel, true)?;
    let dim = |k: &str, d: u64| {
        call.args
            .get(k)
            .and_then(Value::as_u64)
            .unwrap_or(d)
            .to_string()
    };
    let (w, h) = (dim("width", 1024), dim("height", 768));
    let out = tools
        .run(
            call,
            ImageKind::Browser,
            chromium("shot", &[&url, &w, &h, &dest]),
            None,
            None,
        )
        .await?;
    check_exit(&out, "taking the screenshot")?;
    let (sha, bytes) = saved_file(&text(&out.output.stdout))?;
    Ok(
        json!({"path": rel, "sha256": sha, "bytes": bytes, "width": w.parse::<u32>().unwrap_or(0), "height": h.parse::<u32>().unwrap_or(0)}),
    )
}

/// Reads two workspace files through the container (so the workspace
/// grant is what decides), compares them on the host, and writes the diff
/// image back through the container.
pub(super) async fn diff(tools: &SandboxTools, call: &BackendCall<'_>) -> Outcome {
    let before = in_workspace(call, arg(call, "before")?, false)?;
    let after = in_workspace(call, arg(call, "after")?, false)?;
    let diff_rel = arg(call, "diff_path")?;
    let dest = in_workspace(call, diff_rel, true)?;
    let read = vec![
        "/bin/sh".to_owned(),
        "-c".to_owned(),
        r#"stat -c %s "$1" "$2" && cat "$1" "$2""#.to_owned(),
        "diff".to_owned(),
        before.clone(),
        after.clone(),
    ];
    const MAX: usize = 64 << 20;
    let out = tools
        .run(call, ImageKind::Base, read, None, Some(MAX))
        .await?;
    check_exit(&out, "reading the screenshots")?;
    let (a, b) = split_two(&out.output.stdout).ok_or_else(|| {
        Failure::new(
            ErrorType::ToolError,
            "bad_image",
            "the screenshots could not be read whole",
        )
    })?;
    let d = image_diff(&Rgba::decode_png(a)?, &Rgba::decode_png(b)?)?;
    let png = d.image.encode_png()?;
    let write = vec![
        "/bin/sh".to_owned(),
        "-c".to_owned(),
        r#"mkdir -p "$(dirname "$1")" && cat > "$1""#.to_owned(),
        "diff".to_owned(),
        dest,
    ];
    let wrote = tools
        .run(call, ImageKind::Base, write, Some(png.clone()), None)
        .await?;
    check_exit(&wrote, "writing the diff image")?;
    Ok(json!({
        "ssim": d.ssim,
        "changed_pixels": d.changed_pixels,
        "total_pixels": u64::from(d.image.width) * u64::from(d.image.height),
        "diff_path": diff_rel,
        "diff_sha256": warden_signing::sha256_digest(&png).trim_start_matches("sha256:"),
    }))
}

/// `SIZE_A\nSIZE_B\n<A bytes><B bytes>` into the two files.
fn split_two(bytes: &[u8]) -> Option<(&[u8], &[u8])> {
    let mut rest = bytes;
    let mut sizes = [0usize; 2];
    for size in &mut sizes {
        let nl = rest.iter().position(|&c| c == b'\n')?;
        *size = std::str::from_utf8(&rest[..nl]).ok()?.trim().parse().ok()?;
        rest = &rest[nl + 1..];
    }
    (rest.len() == sizes[0] + sizes[1]).then(|| rest.split_at(sizes[0]))
}

pub(super) async fn accessibility(tools: &SandboxTools, call: &BackendCall<'_>) -> Outcome {
    let url = url(call)?;
    let out = tools
        .run(
            call,
            ImageKind::Browser,
            chromium("dom", &[&url, "a11y"]),
            None,
            None,
        )
        .await?;
    check_exit(&out, "scanning the page")?;
    let findings: Value = serde_json::from_slice(&out.output.stdout).map_err(|e| {
        Failure::new(
            ErrorType::ToolError,
            "scan_failed",
            format!("the scanner's output is not JSON: {e}"),
        )
    })?;
    let count = findings.as_array().map_or(0, Vec::len);
    Ok(json!({"url": url, "count": count, "findings": findings}))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn titles_and_file_pairs_parse() {
        assert_eq!(title("<html><head><TITLE a=b> Hi </title></head>"), "Hi");
        assert_eq!(title("<p>none</p>"), "");
        assert_eq!(split_two(b"2\n3\nabcde"), Some((&b"ab"[..], &b"cde"[..])));
        assert_eq!(split_two(b"2\n3\nabcd"), None);
    }
}
