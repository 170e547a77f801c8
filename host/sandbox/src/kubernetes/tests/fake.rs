//! A fake Kubernetes API server on loopback: real HTTP (and the exec
//! subresource's WebSocket) for kube's real client, an in-memory object
//! store, a log of every request, and refusals on demand. Pods never run:
//! a created pod reports `Running` at once, and an exec "runs" by echoing
//! its argv (see [`Fake::exec_reply`]).

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use futures_util::SinkExt;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::Role;

/// (resource, namespace, name); cluster-scoped objects have namespace "".
pub type Key = (String, String, String);

/// One request as the fake saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    pub method: String,
    pub resource: String,
    pub name: String,
}

/// How the fake answers an exec: stdout, stderr, exit code.
pub type ExecReply = Arc<dyn Fn(&[String]) -> (Vec<u8>, Vec<u8>, i32) + Send + Sync>;

#[derive(Default)]
pub struct State {
    pub objects: BTreeMap<Key, Value>,
    pub log: Vec<Seen>,
    /// `(method, resource)` refused with this HTTP status and Status body.
    pub refuse: Option<(String, String, u16, Value)>,
    /// Argv of every exec.
    pub execs: Vec<Vec<String>>,
    /// The status a created pod reports (default: `Running`).
    pub pod_status: Option<Value>,
    version: u64,
}

pub struct Fake {
    pub state: Arc<Mutex<State>>,
    pub url: String,
    exec_reply: Arc<Mutex<Option<ExecReply>>>,
}

impl Fake {
    pub async fn start() -> Fake {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let state = Arc::new(Mutex::new(State::default()));
        let exec_reply: Arc<Mutex<Option<ExecReply>>> = Arc::new(Mutex::new(None));
        let (s, e) = (state.clone(), exec_reply.clone());
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let (s, e) = (s.clone(), e.clone());
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |req| {
                        let (s, e) = (s.clone(), e.clone());
                        async move { Ok::<_, Infallible>(handle(req, s, e).await) }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .with_upgrades()
                        .await;
                });
            }
        });
        Fake {
            state,
            url,
            exec_reply,
        }
    }

    pub fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap()
    }

    /// Answers execs with `reply` (default: argv joined by spaces, exit 0).
    pub fn exec_reply(&self, reply: ExecReply) {
        *self.exec_reply.lock().unwrap() = Some(reply);
    }

    /// Puts an object in the store, as if someone else had created it.
    pub fn seed(&self, resource: &str, namespace: &str, object: Value) {
        let name = object["metadata"]["name"].as_str().unwrap().to_owned();
        self.state()
            .objects
            .insert((resource.to_owned(), namespace.to_owned(), name), object);
    }

    pub fn names(&self, resource: &str) -> Vec<String> {
        self.state()
            .objects
            .keys()
            .filter(|k| k.0 == resource)
            .map(|k| k.2.clone())
            .collect()
    }

    pub fn object(&self, resource: &str, name: &str) -> Option<Value> {
        self.state()
            .objects
            .iter()
            .find(|(k, _)| k.0 == resource && k.2 == name)
            .map(|(_, v)| v.clone())
    }

    /// A kubeconfig file naming this server.
    pub fn kubeconfig(&self, dir: &std::path::Path) -> std::path::PathBuf {
        let path = dir.join("kubeconfig");
        let text = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n    server: {}\n\
             users:\n- name: fake\n  user:\n    token: fake\ncontexts:\n- name: fake\n  context:\n    \
             cluster: fake\n    user: fake\ncurrent-context: fake\n",
            self.url
        );
        std::fs::write(&path, text).unwrap();
        path
    }
}

/// The Status body of a failed request.
pub fn status(code: u16, reason: &str, message: &str) -> Value {
    json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {},
        "status": "Failure", "message": message, "reason": reason, "code": code,
    })
}

/// `(resource, namespace, name, subresource)` of an API path.
fn route(path: &str) -> Option<(String, String, String, String)> {
    let segs: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let rest = match segs.first() {
        Some(&"api") => segs.get(2..)?,
        Some(&"apis") => segs.get(3..)?,
        _ => return None,
    };
    let at = |i: usize| rest.get(i).map_or(String::new(), |s| (*s).to_owned());
    if rest.first() == Some(&"namespaces") && rest.len() >= 3 {
        Some((at(2), at(1), at(3), at(4)))
    } else {
        Some((at(0), String::new(), at(1), at(2)))
    }
}

fn query(uri: &hyper::Uri, key: &str) -> Vec<String> {
    uri.query()
        .unwrap_or_default()
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .filter(|(k, _)| *k == key)
        .map(|(_, v)| decode(v))
        .collect()
}

fn decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap();
            out.push(u8::from_str_radix(hex, 16).unwrap());
            i += 3;
        } else {
            out.push(if bytes[i] == b'+' { b' ' } else { bytes[i] });
            i += 1;
        }
    }
    String::from_utf8(out).unwrap()
}

fn matches(object: &Value, selector: &str) -> bool {
    selector.split(',').filter(|s| !s.is_empty()).all(|term| {
        let (k, v) = term.split_once('=').unwrap();
        object["metadata"]["labels"][k].as_str() == Some(v)
    })
}

fn reply(code: u16, body: &Value) -> Response<Full<Bytes>> {
    Response::builder()
        .status(code)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body.to_string())))
        .unwrap()
}

async fn handle(
    req: Request<Incoming>,
    state: Arc<Mutex<State>>,
    exec_reply: Arc<Mutex<Option<ExecReply>>>,
) -> Response<Full<Bytes>> {
    let method = req.method().as_str().to_owned();
    let uri = req.uri().clone();
    let Some((resource, ns, name, sub)) = route(uri.path()) else {
        return reply(404, &status(404, "NotFound", "no such path"));
    };
    if sub == "exec" {
        let argv = query(&uri, "command");
        state.lock().unwrap().execs.push(argv.clone());
        let reply = exec_reply.lock().unwrap().clone();
        return exec(req, argv, reply);
    }
    let body = req.into_body().collect().await.unwrap().to_bytes();
    let mut st = state.lock().unwrap();
    st.log.push(Seen {
        method: method.clone(),
        resource: resource.clone(),
        name: name.clone(),
    });
    if let Some((m, r, code, body)) = &st.refuse
        && *m == method
        && *r == resource
    {
        return reply(*code, body);
    }
    let key = (resource.clone(), ns.clone(), name.clone());
    match method.as_str() {
        "GET" if name.is_empty() => {
            let selector = query(&uri, "labelSelector").concat();
            let items: Vec<Value> = st
                .objects
                .iter()
                .filter(|(k, v)| k.0 == resource && k.1 == ns && matches(v, &selector))
                .map(|(_, v)| v.clone())
                .collect();
            reply(
                200,
                &json!({"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": "1"}, "items": items}),
            )
        }
        "GET" => match st.objects.get(&key) {
            Some(v) => reply(200, v),
            None => reply(
                404,
                &status(404, "NotFound", &format!("{resource} \"{name}\" not found")),
            ),
        },
        "POST" | "PATCH" => {
            let mut object: Value = serde_json::from_slice(&body).unwrap();
            let name = object["metadata"]["name"]
                .as_str()
                .unwrap_or(&name)
                .to_owned();
            let key = (resource.clone(), ns.clone(), name.clone());
            if method == "POST" && st.objects.contains_key(&key) {
                return reply(
                    409,
                    &status(
                        409,
                        "AlreadyExists",
                        &format!("{resource} \"{name}\" already exists"),
                    ),
                );
            }
            st.version += 1;
            object["metadata"]["resourceVersion"] = json!(st.version.to_string());
            object["metadata"]["uid"] = json!(format!("uid-{}", st.version));
            if resource == "pods" {
                object["status"] = st
                    .pod_status
                    .clone()
                    .unwrap_or_else(|| json!({"phase": "Running"}));
            }
            st.objects.insert(key, object.clone());
            reply(if method == "POST" { 201 } else { 200 }, &object)
        }
        "DELETE" => match st.objects.remove(&key) {
            Some(v) => reply(200, &v),
            None => reply(
                404,
                &status(404, "NotFound", &format!("{resource} \"{name}\" not found")),
            ),
        },
        _ => reply(405, &status(405, "MethodNotAllowed", "not here")),
    }
}

/// Upgrades to the exec WebSocket (`v5.channel.k8s.io`), sends the
/// reply's stdout, stderr and exit status, and closes.
fn exec(
    req: Request<Incoming>,
    argv: Vec<String>,
    reply: Option<ExecReply>,
) -> Response<Full<Bytes>> {
    let key = req
        .headers()
        .get("sec-websocket-key")
        .map(|k| k.as_bytes().to_vec())
        .unwrap_or_default();
    let accept = tokio_tungstenite::tungstenite::handshake::derive_accept_key(&key);
    tokio::spawn(async move {
        let upgraded = hyper::upgrade::on(req).await.unwrap();
        let mut ws = tokio_tungstenite::WebSocketStream::from_raw_socket(
            TokioIo::new(upgraded),
            Role::Server,
            None,
        )
        .await;
        let (out, err, code) = match &reply {
            Some(f) => f(&argv),
            None => (argv.join(" ").into_bytes(), Vec::new(), 0),
        };
        for (channel, data) in [(1u8, out), (2u8, err)] {
            if !data.is_empty() {
                let mut frame = vec![channel];
                frame.extend(data);
                ws.send(Message::binary(frame)).await.unwrap();
            }
        }
        let status = if code == 0 {
            json!({"metadata": {}, "status": "Success"})
        } else {
            json!({
                "metadata": {}, "status": "Failure", "reason": "NonZeroExitCode",
                "message": format!("command terminated with non-zero exit code: exit status {code}"),
                "details": {"causes": [{"reason": "ExitCode", "message": code.to_string()}]},
            })
        };
        let mut frame = vec![3u8];
        frame.extend(status.to_string().into_bytes());
        ws.send(Message::binary(frame)).await.unwrap();
        let _ = ws.close(None).await;
    });
    Response::builder()
        .status(StatusCode::SWITCHING_PROTOCOLS)
        .header("upgrade", "websocket")
        .header("connection", "Upgrade")
        .header("sec-websocket-accept", accept)
        .header("sec-websocket-protocol", "v5.channel.k8s.io")
        .body(Full::new(Bytes::new()))
        .unwrap()
}
