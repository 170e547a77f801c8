use super::*;

#[derive(Debug)]
struct Never;

impl TokenVerifier for Never {
    fn verify<'a>(&'a self, _: &'a str) -> BoxFuture<'a, Result<Verified, Refusal>> {
        Box::pin(async {
            Err(Refusal::InvalidToken {
                description: "no".into(),
            })
        })
    }

    fn operator<'a>(&'a self, _: &'a str) -> BoxFuture<'a, Result<OperatorToken, Refusal>> {
        Box::pin(async {
            Err(Refusal::InvalidToken {
                description: "no".into(),
            })
        })
    }
}

fn server(resource: &str) -> ResourceServer {
    ResourceServer {
        verifier: Arc::new(Never),
        resource: resource.into(),
        authorization_servers: vec!["https://issuer.example".into()],
        scopes: vec!["mcp:tools".into(), "mcp:read".into()],
    }
}

#[test]
fn the_metadata_url_inserts_the_well_known_path_before_the_resource_path() {
    let s = server("https://warden.example:8443/mcp");
    assert_eq!(
        s.metadata_url(),
        "https://warden.example:8443/.well-known/oauth-protected-resource/mcp"
    );
    assert_eq!(
        s.metadata_paths(),
        vec![
            "/.well-known/oauth-protected-resource".to_owned(),
            "/.well-known/oauth-protected-resource/mcp".to_owned()
        ]
    );
    let root = server("https://warden.example/");
    assert_eq!(
        root.metadata_url(),
        "https://warden.example/.well-known/oauth-protected-resource"
    );
    assert_eq!(root.metadata_paths().len(), 1);
}

#[test]
fn challenges_name_the_metadata_and_scopes_and_cannot_inject() {
    let s = server("http://127.0.0.1:1/mcp");
    let header = s.challenge(Some(("invalid_token", "bad \"x\"\r\nSet-Cookie: a")), "a b");
    assert_eq!(
        header,
        "Bearer error=\"invalid_token\", error_description=\"bad xSet-Cookie: a\", \
         resource_metadata=\"http://127.0.0.1:1/.well-known/oauth-protected-resource/mcp\", \
         scope=\"a b\""
    );
    let bare = s.unauthorized(None);
    assert_eq!(bare.status(), StatusCode::UNAUTHORIZED);
    let scoped = s.unauthorized(Some(&Refusal::InsufficientScope {
        scope: "mcp:tools".into(),
        description: "missing".into(),
    }));
    assert_eq!(scoped.status(), StatusCode::FORBIDDEN);
    let value = scoped
        .headers()
        .get(http::header::WWW_AUTHENTICATE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    assert!(value.contains("error=\"insufficient_scope\""), "{value}");
    assert!(value.contains("scope=\"mcp:tools\""), "{value}");
}
