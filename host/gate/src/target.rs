//! Network targets the decision refuses before anything connects.
//!
//! Attack: server-side request forgery through a web tool — `http_fetch`
//! or a browser pointed at the host's loopback services, the operator's
//! private network, or the cloud metadata endpoint, in any spelling of
//! the address (`127.1`, `2130706433`, `0x7f.1`, `[::ffff:127.0.0.1]`).
//! The runtime already refuses such connections; deciding here too makes
//! the refusal a policy decision the agent sees (and the audit log keeps)
//! before any code runs, and covers tools whose backend would not check.
//! A grant that names the address (an IP or CIDR grant) still allows it.

use warden_api::Grants;
use warden_api::net::{EffectiveNet, Host, Target};
use warden_policy::{Decision, Layer};

/// Categories whose specifier is a URL the tool will reach.
const URL_CATEGORIES: &[&str] = &["web", "external-data", "browser"];

/// A denial when `specifier` is an http(s) URL of a non-public address
/// (or a `localhost` name) that no grant names.
pub fn non_public(category: &str, specifier: Option<&str>, grants: &Grants) -> Option<Decision> {
    if !URL_CATEGORIES.contains(&category) {
        return None;
    }
    let url = specifier?.trim();
    let (target, _) = Target::from_url(url).ok()?;
    let net = EffectiveNet::new(&grants.net, &grants.net);
    let refusal = match &target.host {
        Host::Ip(ip) => net.check_address(&target, *ip).err()?.reason,
        Host::Name(name) if name == "localhost" || name.ends_with(".localhost") => {
            net.check_target(&target).err().map(|_| {
                format!("`{name}` names this host's loopback interface; a grant must name it")
            })?
        }
        Host::Name(_) => return None,
    };
    Some(Decision::deny(
        Layer::Constraint,
        format!("{refusal}; the URL `{url}` is not on the public internet"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grants(net: &[&str]) -> Grants {
        Grants {
            net: net.iter().map(|p| p.parse().unwrap()).collect(),
            ..Grants::default()
        }
    }

    #[test]
    fn every_spelling_of_a_private_address_is_refused_unless_named() {
        let none = grants(&[]);
        for url in [
            "http://127.0.0.1/",
            "http://127.1:8080/x",
            "http://2130706433/",
            "http://0x7f.0.0.1/",
            "http://[::1]/",
            "http://[::ffff:127.0.0.1]/",
            "http://10.0.0.5/admin",
            "http://192.168.1.1/",
            "http://169.254.169.254/latest/meta-data/",
            "http://100.64.0.1/",
            "https://localhost:8443/",
            "http://api.localhost/",
        ] {
            let d = non_public("web", Some(url), &none);
            assert!(d.is_some(), "{url} must be refused");
        }
        for url in ["https://example.com/", "http://93.184.216.34/", "not a url"] {
            assert!(non_public("web", Some(url), &none).is_none(), "{url}");
        }
        assert!(non_public("file-system", Some("http://127.0.0.1/"), &none).is_none());
        let named = grants(&["127.0.0.1:8080"]);
        assert!(non_public("web", Some("http://127.0.0.1:8080/"), &named).is_none());
        assert!(non_public("web", Some("http://10.0.0.5/"), &grants(&["10.0.0.0/8"])).is_none());
    }
}
