//! A hostile component that spreads its allocation over two linear
//! memories, each under the call's memory limit, together over it: the
//! runtime's one budget per call must stop it.
//!
//! Rust guests have a single memory, so this component is written by hand
//! in the component text format: a core module `grower` with a memory of
//! its own, and the main module (its own memory, the canonical ABI data
//! for `tools()` and the results). `invoke` grows both memories by
//! `PAGES` and traps when either growth is refused, as an allocator that
//! runs out does. It carries a real `warden:manifest` section and goes
//! through the same load (manifest cross-check included) as any plugin.

use serde_json::json;
use warden_api::{CallLimits, Grants};

use crate::common::{self, data, error};

/// Pages each memory grows by per call: 20 MiB, under a 32 MiB limit.
const PAGES: u32 = 320;
const TOOL: &str = "mem_spread";

/// Canonical-ABI data for the main module's memory, built front to back.
#[derive(Default)]
struct Layout {
    bytes: Vec<u8>,
}

impl Layout {
    fn align(&mut self, to: usize) -> u32 {
        while !self.bytes.len().is_multiple_of(to) {
            self.bytes.push(0);
        }
        u32::try_from(self.bytes.len()).unwrap()
    }

    fn u32(&mut self, v: u32) {
        self.bytes.extend_from_slice(&v.to_le_bytes());
    }

    fn u8_padded(&mut self, v: u8) {
        self.bytes.extend_from_slice(&[v, 0, 0, 0]);
    }

    /// Stores `s` and returns its (pointer, length).
    fn string(&mut self, s: &str) -> (u32, u32) {
        let at = u32::try_from(self.bytes.len()).unwrap();
        self.bytes.extend_from_slice(s.as_bytes());
        (at, u32::try_from(s.len()).unwrap())
    }

    fn pair(&mut self, (ptr, len): (u32, u32)) {
        self.u32(ptr);
        self.u32(len);
    }

    fn wat_data(&self) -> String {
        self.bytes.iter().map(|b| format!("\\{b:02x}")).collect()
    }
}

struct Component {
    wat: String,
    manifest: Vec<u8>,
}

/// The tool spec, as the manifest declares it and `tools()` returns it.
fn spec() -> serde_json::Value {
    json!({
        "name": TOOL,
        "summary": "Grows two linear memories",
        "description": "Grows its own memory and a second module's memory by the same amount.",
        "category": "analytics",
        "action-type": "memory:read",
        "params-schema": {"type": "object"},
        "result-schema": {"type": "string"},
        "side-effect": false
    })
}

fn component() -> Component {
    let spec = spec();
    let text = |key: &str| {
        let v = &spec[key];
        v.as_str().map_or_else(|| v.to_string(), str::to_owned)
    };
    let mut mem = Layout::default();
    let name = mem.string(TOOL);
    let summary = mem.string(&text("summary"));
    let description = mem.string(&text("description"));
    let action = mem.string(&text("action-type"));
    let params = mem.string(&text("params-schema"));
    let result = mem.string(&text("result-schema"));
    let ok_text = mem.string("\"both memories grew\"");
    let err_text = mem.string("no such resource");

    // record tool-spec: 84 bytes, align 4.
    let spec_at = mem.align(4);
    mem.pair(name);
    mem.pair(summary);
    mem.pair(description);
    let category = CATEGORIES.iter().position(|c| *c == "analytics").unwrap();
    mem.u8_padded(u8::try_from(category).unwrap());
    mem.pair(action);
    mem.pair(params);
    mem.pair(result);
    mem.u8_padded(0); // side-effect: false
    mem.u8_padded(0); // specifier-template: none
    mem.pair((0, 0)); // (the option's payload slot)
    mem.pair((0, 0)); // examples: empty
    mem.pair((0, 0)); // resources: empty
    assert_eq!(mem.bytes.len() - spec_at as usize, 84);
    let tools_ret = mem.align(4);
    mem.pair((spec_at, 1));

    // result<string, tool-error>: 28 bytes, payload at offset 4.
    let ok_ret = mem.align(4);
    mem.u8_padded(0);
    mem.pair(ok_text);
    mem.u32(0);
    mem.u32(0);
    mem.u32(0);
    let err_ret = mem.align(4);
    mem.u8_padded(1);
    mem.u8_padded(1); // kind: not-found
    mem.pair(err_text);
    mem.u8_padded(0); // code: none
    mem.u32(0);
    mem.u32(0);
    let heap = mem.align(16);

    let categories = CATEGORIES
        .iter()
        .map(|c| format!("{c:?}"))
        .collect::<Vec<_>>()
        .join(" ");
    let data = mem.wat_data();
    let wat = format!(
        r#"(component
  (core module $grower
    (memory (export "memory") 0)
    (func (export "grow") (param i32) (result i32) (memory.grow (local.get 0))))
  (core module $main
    (import "grower" "grow" (func $grow (param i32) (result i32)))
    (memory (export "memory") 1)
    (global $bump (mut i32) (i32.const {heap}))
    (func (export "cabi_realloc") (param i32 i32 i32 i32) (result i32)
      (local $p i32)
      (local.set $p (i32.and
        (i32.add (global.get $bump) (i32.sub (local.get 2) (i32.const 1)))
        (i32.sub (i32.const 0) (local.get 2))))
      (global.set $bump (i32.add (local.get $p) (local.get 3)))
      (if (i32.gt_u (global.get $bump) (i32.mul (memory.size) (i32.const 65536)))
        (then (if (i32.eq (memory.grow (i32.add (i32.shr_u (global.get $bump) (i32.const 16)) (i32.const 1))) (i32.const -1))
          (then unreachable))))
      (local.get $p))
    (func (export "tools") (result i32) (i32.const {tools_ret}))
    (func (export "invoke") (param i32) (result i32)
      (if (i32.eq (call $grow (i32.const {PAGES})) (i32.const -1)) (then unreachable))
      (if (i32.eq (memory.grow (i32.const {PAGES})) (i32.const -1)) (then unreachable))
      (i32.const {ok_ret}))
    (func (export "resource") (param i32 i32 i32 i32) (result i32) (i32.const {err_ret}))
    (data (i32.const 0) "{data}"))
  (core instance $g (instantiate $grower))
  (core instance $m (instantiate $main (with "grower" (instance $g))))
  (type $category' (enum {categories}))
  (export $category "category" (type $category'))
  (type $example' (record (field "description" string) (field "args-json" string)))
  (export $example "example" (type $example'))
  (type $tool-spec' (record
    (field "name" string) (field "summary" string) (field "description" string)
    (field "category" $category) (field "action-type" string)
    (field "params-schema" string) (field "result-schema" string)
    (field "side-effect" bool) (field "specifier-template" (option string))
    (field "examples" (list $example)) (field "resources" (list string))))
  (export $tool-spec "tool-spec" (type $tool-spec'))
  (type $call-context' (record
    (field "agent" string) (field "session" string) (field "task" (option string))
    (field "request-id" string) (field "cwd" (option string))
    (field "granted-dirs" (list string))))
  (export $call-context "call-context" (type $call-context'))
  (type $error-kind' (enum "invalid-argument" "not-found" "access-denied" "conflict" "unsupported" "failed"))
  (export $error-kind "error-kind" (type $error-kind'))
  (type $tool-error' (record (field "kind" $error-kind) (field "message" string) (field "code" (option string))))
  (export $tool-error "tool-error" (type $tool-error'))
  (func (export "tools") (result (list $tool-spec))
    (canon lift (core func $m "tools") (memory (core memory $m "memory")) (realloc (core func $m "cabi_realloc"))))
  (func (export "invoke") (param "context" $call-context) (param "name" string) (param "args-json" string)
    (result (result string (error $tool-error)))
    (canon lift (core func $m "invoke") (memory (core memory $m "memory")) (realloc (core func $m "cabi_realloc"))))
  (func (export "resource") (param "tool" string) (param "id" string)
    (result (result string (error $tool-error)))
    (canon lift (core func $m "resource") (memory (core memory $m "memory")) (realloc (core func $m "cabi_realloc"))))
)"#
    );
    let manifest = json!({
        "manifest-version": warden_api::MANIFEST_VERSION,
        "wit": warden_api::WIT_PACKAGE,
        "plugin": {"name": "mem", "version": "0.1.0"},
        "capabilities": {"filesystem": "none"},
        "tools": [spec],
    });
    Component {
        wat,
        manifest: serde_json::to_vec(&manifest).unwrap(),
    }
}

/// `wit/plugin.wit`'s categories, in order.
const CATEGORIES: [&str; 15] = [
    "file-system",
    "code-execution",
    "version-control",
    "web",
    "database",
    "terminal",
    "design",
    "communication",
    "analytics",
    "deployment",
    "memory",
    "browser",
    "external-data",
    "desktop",
    "mcp",
];

/// The component's binary with its `warden:manifest` custom section.
fn binary() -> Vec<u8> {
    let c = component();
    let mut bytes = wat::parse_str(&c.wat).unwrap();
    let name = "warden:manifest";
    let mut payload = Vec::new();
    leb128(&mut payload, name.len());
    payload.extend_from_slice(name.as_bytes());
    payload.extend_from_slice(&c.manifest);
    bytes.push(0); // custom section id
    leb128(&mut bytes, payload.len());
    bytes.extend_from_slice(&payload);
    bytes
}

fn leb128(out: &mut Vec<u8>, mut v: usize) {
    loop {
        let byte = u8::try_from(v & 0x7f).unwrap();
        v >>= 7;
        if v == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn two_memories_share_one_budget() {
    let bytes = binary();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mem.wasm");
    std::fs::write(&path, &bytes).unwrap();
    let plugin = common::runtime()
        .load_bytes(&path, &bytes)
        .await
        .expect("the hand-written component loads");

    // Each memory alone stays under 32 MiB (20 MiB each); together they
    // would hold 40 MiB.
    let tight = CallLimits {
        memory_bytes: 32 << 20,
        ..common::limits()
    };
    let e = common::call(&plugin, TOOL, json!({}), &Grants::default(), tight).await;
    let (ty, code, msg) = error(&e);
    assert_eq!(
        (ty.as_str(), code.as_str()),
        ("LimitExceeded", "memory_limit"),
        "{msg}"
    );

    // With room for both, the same call succeeds: the refusal above was
    // the shared budget, not the component.
    let roomy = CallLimits {
        memory_bytes: 64 << 20,
        ..common::limits()
    };
    let e = common::call(&plugin, TOOL, json!({}), &Grants::default(), roomy).await;
    assert_eq!(data(&e), &json!("both memories grew"));
}
