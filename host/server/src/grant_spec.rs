//! Plugin grants as people spell them: `--grant-fs
//! HOST_DIR[:GUEST_DIR][:ro|rw]`, `--grant-net PATTERN` and `--grant-env
//! KEY[=VALUE]` (the same spellings as `grant-fs`, `grant-net` and
//! `grant-env` in the configuration).

use std::path::PathBuf;

use warden_api::net::NetPattern;
use warden_api::{EnvGrant, FsAccess, FsGrant, Grants, Secret, check_env_key};

use crate::ServerError;

fn bad(at: String, message: impl Into<String>) -> ServerError {
    ServerError::Grant {
        at,
        message: message.into(),
    }
}

/// The grants of one plugin from their spellings; `origin` says where
/// they were written (empty for the command line, else e.g.
/// `config: at plugins[0]`), and every error names it.
pub fn grants(
    origin: &str,
    fs: &[String],
    net: &[String],
    env: &[String],
) -> Result<Grants, ServerError> {
    let at = |flag: &str, spec: &str| {
        if origin.is_empty() {
            format!("{flag} {spec:?}")
        } else {
            format!("{origin}: {flag} {spec:?}")
        }
    };
    Ok(Grants {
        fs: fs
            .iter()
            .map(|g| parse_fs(g).map_err(|m| bad(at("--grant-fs", g), m)))
            .collect::<Result<_, _>>()?,
        net: net
            .iter()
            .map(|g| parse_net(g).map_err(|m| bad(at("--grant-net", g), m)))
            .collect::<Result<_, _>>()?,
        env: env
            .iter()
            .map(|g| {
                let key = g.split_once('=').map_or(g.as_str(), |(k, _)| k);
                parse_env(g).map_err(|m| bad(at("--grant-env", key), m))
            })
            .collect::<Result<_, _>>()?,
    })
}

/// Parses a network grant pattern (see `docs/configuration.md`).
fn parse_net(spec: &str) -> Result<NetPattern, String> {
    spec.parse()
        .map_err(|e: warden_api::net::NetError| e.to_string())
}

/// Parses an environment grant: `KEY=VALUE` grants that value, `KEY` the
/// host's own value of `KEY` (which must be set). Errors never include
/// the value.
fn parse_env(spec: &str) -> Result<EnvGrant, String> {
    let (key, value) = match spec.split_once('=') {
        Some((key, value)) => (key, Some(value)),
        None => (spec, None),
    };
    check_env_key(key).map_err(|e| e.to_string())?;
    let value = match value {
        Some(v) => v.to_owned(),
        None => std::env::var(key).map_err(|_| {
            format!(
                "`{key}` is not set in this environment; set it, or give the value as {key}=VALUE"
            )
        })?,
    };
    Ok(EnvGrant {
        key: key.to_owned(),
        value: Secret::new(value),
    })
}

/// A directory grant's host directory, guest path and access, unchecked.
fn split_fs(spec: &str) -> (&str, Option<&str>, FsAccess) {
    let (rest, access) = match spec.rsplit_once(':') {
        Some((rest, "ro")) => (rest, FsAccess::Read),
        Some((rest, "rw")) => (rest, FsAccess::ReadWrite),
        _ => (spec, FsAccess::Read),
    };
    match rest.split_once(':') {
        Some((host, guest)) => (host, Some(guest), access),
        None => (rest, None, access),
    }
}

/// The host directory a directory grant names, as written.
pub fn fs_host(spec: &str) -> &str {
    split_fs(spec).0
}

/// Parses a directory grant. The host directory must exist; the guest path
/// defaults to the host directory's absolute path and must be absolute;
/// access defaults to read-only.
fn parse_fs(spec: &str) -> Result<FsGrant, String> {
    let (host, guest, access) = split_fs(spec);
    if host.is_empty() {
        return Err("the host directory is empty".into());
    }
    let host_path = PathBuf::from(host)
        .canonicalize()
        .map_err(|e| format!("host directory {host:?}: {e}"))?;
    if !host_path.is_dir() {
        return Err(format!("{} is not a directory", host_path.display()));
    }
    let guest_path = match guest {
        Some(g) if g.starts_with('/') && !g.contains('\0') => g.trim_end_matches('/').to_owned(),
        Some(g) => {
            return Err(format!(
                "the guest path {g:?} must be absolute (e.g. /workspace)"
            ));
        }
        None => host_path.to_string_lossy().into_owned(),
    };
    let guest_path = if guest_path.is_empty() {
        "/".to_owned()
    } else {
        guest_path
    };
    Ok(FsGrant {
        host_path,
        guest_path,
        access,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_to_read_only_at_the_same_path() {
        let dir = std::env::temp_dir().canonicalize().unwrap();
        let g = parse_fs(dir.to_str().unwrap()).unwrap();
        assert_eq!(g.access, FsAccess::Read);
        assert_eq!(g.guest_path, dir.to_string_lossy());
    }

    #[test]
    fn guest_path_and_mode() {
        let dir = std::env::temp_dir();
        let g = parse_fs(&format!("{}:/work:rw", dir.display())).unwrap();
        assert_eq!(
            (g.guest_path.as_str(), g.access),
            ("/work", FsAccess::ReadWrite)
        );
        let g = parse_fs(&format!("{}:ro", dir.display())).unwrap();
        assert_eq!(g.access, FsAccess::Read);
    }

    #[test]
    fn env_grants_take_a_value_or_the_host_value() {
        let g = parse_env("TOKEN=s3cr3t=x").unwrap();
        assert_eq!((g.key.as_str(), g.value.expose()), ("TOKEN", "s3cr3t=x"));
        let path = std::env::var("PATH").unwrap();
        assert_eq!(parse_env("PATH").unwrap().value.expose(), path);
        let e = parse_env("WARDEN_TEST_SURELY_UNSET_VAR").unwrap_err();
        assert!(e.contains("is not set"), "{e}");
        let e = grants("", &[], &[], &["BAD-KEY=s3cr3t".into()]).unwrap_err();
        assert!(!e.to_string().contains("s3cr3t"), "{e}");
    }

    #[test]
    fn net_grants_parse() {
        assert_eq!(
            parse_net("https://API.example.com").unwrap().to_string(),
            "https://api.example.com:443"
        );
        let e = parse_net("*").unwrap_err();
        assert!(e.contains("insecure:allow-all"), "{e}");
    }

    #[test]
    fn bad_grants_are_errors() {
        assert!(parse_fs("/definitely/not/here").is_err());
        assert!(parse_fs(&format!("{}:relative", std::env::temp_dir().display())).is_err());
        assert!(parse_fs(":/x").is_err());
    }
}
