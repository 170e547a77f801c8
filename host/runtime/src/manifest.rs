//! Reading a plugin's manifest without running it.
//!
//! The `warden:manifest` custom section sits in the component's core
//! module, so the whole binary is walked, nested modules included. Exactly
//! one such section must exist: two would let a crafted component show
//! `inspect` one manifest and the loader another.

use warden_api::{MANIFEST_SECTION, Manifest};
use wasmparser::{Encoding, Parser, Payload};

/// What `warden plugin inspect` shows: the manifest and the digest.
#[derive(Debug, Clone)]
pub struct Inspection {
    pub manifest: Manifest,
    /// `sha256:<hex>` of the component bytes.
    pub digest: String,
    pub size: usize,
}

/// `sha256:<hex>` of the component bytes, as `inspect` shows them.
pub fn component_digest(bytes: &[u8]) -> String {
    warden_signing::sha256_digest(bytes)
}

/// Why a manifest could not be read.
pub(crate) enum ManifestProblem {
    /// The bytes are not a well-formed component.
    Malformed(String),
    /// A well-formed component without a usable manifest.
    Unusable(String),
}

/// Reads and checks the manifest of a component. The error says what is
/// wrong, not where: callers add the file.
pub fn read_manifest(bytes: &[u8]) -> Result<Manifest, String> {
    read(bytes).map_err(|(ManifestProblem::Malformed(e) | ManifestProblem::Unusable(e))| e)
}

pub(crate) fn read(bytes: &[u8]) -> Result<Manifest, ManifestProblem> {
    read_section(bytes).map(|(manifest, _)| manifest)
}

/// The manifest and the raw section it was read from.
pub(crate) fn read_section(bytes: &[u8]) -> Result<(Manifest, &[u8]), ManifestProblem> {
    let section = section(bytes)?;
    let manifest =
        Manifest::from_json(section).map_err(|e| ManifestProblem::Unusable(e.to_string()))?;
    Ok((manifest, section))
}

/// The raw bytes of the component's one `warden:manifest` section: what a
/// publisher's signature covers besides the component bytes.
pub fn manifest_section(bytes: &[u8]) -> Result<&[u8], String> {
    section(bytes).map_err(|(ManifestProblem::Malformed(e) | ManifestProblem::Unusable(e))| e)
}

fn section(bytes: &[u8]) -> Result<&[u8], ManifestProblem> {
    use ManifestProblem::{Malformed, Unusable};
    let mut found: Option<&[u8]> = None;
    let mut is_component = false;
    for payload in Parser::new(0).parse_all(bytes) {
        match payload.map_err(|e| Malformed(format!("malformed binary: {e}")))? {
            Payload::Version { encoding, .. } if !is_component => {
                if encoding != Encoding::Component {
                    return Err(Malformed(
                        "this is a core wasm module, not a component (build for wasm32-wasip2)"
                            .into(),
                    ));
                }
                is_component = true;
            }
            Payload::CustomSection(section) if section.name() == MANIFEST_SECTION => {
                if found.is_some() {
                    return Err(Unusable(format!(
                        "more than one `{MANIFEST_SECTION}` section"
                    )));
                }
                found = Some(section.data());
            }
            _ => {}
        }
    }
    let data = found.ok_or_else(|| {
        Unusable(format!(
            "no `{MANIFEST_SECTION}` section (was it built with warden-sdk's #[plugin]?)"
        ))
    })?;
    if !is_component {
        return Err(Malformed("empty or truncated binary".into()));
    }
    Ok(data)
}

/// Manifest and digest of a component, without compiling or running it.
pub fn inspect(bytes: &[u8]) -> Result<Inspection, String> {
    Ok(Inspection {
        manifest: read_manifest(bytes)?,
        digest: component_digest(bytes),
        size: bytes.len(),
    })
}
