// Drives a real `warden serve` with the official MCP TypeScript SDK
// (`@modelcontextprotocol/sdk`, pinned in package.json).
//
// Usage: node client.mjs --transport stdio|http --warden BIN --config FILE
//                        --state DIR --workspace DIR --extra-plugin FILE
//                        [SCENARIO...]
//
// The config defines agents `alice` (standard; her asks are answered by
// the person behind her client) and `bob` (level `reader`: file-system
// only), bearer tokens for both, and the fs and probe plugins. With no
// SCENARIO every scenario runs. Each check throws on failure; the script
// prints "FAILED - <check>" and exits non-zero, or "all checks passed".
//
// Every result is checked the way a user of this SDK sees it: a denial or
// a tool error is a readable `isError` result, never an exception.

import { spawn, spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  ElicitRequestSchema,
  ToolListChangedNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";

// Every tool name the client uses, in one place.
const TOOL = {
  read: "fs_read",
  write: "fs_write",
  probe: "probe_run",
  helloCountLines: "hello_count_lines",
};

const TOKENS = { alice: "alice-token-0123456789", bob: "bob-token-0123456789ab" };

class Check extends Error {}

function show(detail) {
  if (typeof detail === "string") return detail;
  try {
    return JSON.stringify(detail);
  } catch {
    return String(detail);
  }
}

function expect(cond, what, detail = "") {
  if (!cond) throw new Check(`${what}: ${show(detail)}`);
  console.log(`ok - ${what}`);
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Resolves when `promise` does, or fails the check `what` after `ms`. */
function within(ms, promise, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Check(`${what}: nothing within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** An error result's envelope: its text as JSON. Error results carry no
 *  structured content, which the SDK would hold to the output schema. */
function envelope(result) {
  expect(result.isError === true, "the result is an error result", result);
  expect(result.structuredContent === undefined, "an error result carries no structured content", result);
  const text = (result.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("");
  try {
    return JSON.parse(text);
  } catch {
    throw new Check(`an error result's text is its envelope as JSON: ${text}`);
  }
}

/** A readable error result: status, domain code and message. */
function readableError(result, what) {
  const env = envelope(result);
  expect(
    env.status === "error" && typeof env.domain_code === "string" && env.domain_code && typeof env.message === "string" && env.message,
    `${what}: the envelope says why`,
    env,
  );
  return env;
}

/** Runs `warden ARGS...`; fails the check when it fails. */
function warden(args, ...argv) {
  const done = spawnSync(args.warden, argv, { encoding: "utf8" });
  if (done.status !== 0) {
    throw new Check(`warden ${argv.join(" ")} failed (${done.status}): ${done.stdout}${done.stderr}`);
  }
  return done.stdout;
}

/** A `warden serve --http` process on an ephemeral loopback port. */
class HttpServer {
  static async start(args) {
    const proc = spawn(
      args.warden,
      ["serve", "--http", "127.0.0.1:0", "--config", args.config, "--state-dir", args.state],
      { stdio: ["ignore", "ignore", "pipe"] },
    );
    const server = new HttpServer();
    server.proc = proc;
    server.url = await within(
      120_000,
      new Promise((resolve, reject) => {
        let buffered = "";
        proc.stderr.setEncoding("utf8");
        proc.stderr.on("data", (chunk) => {
          buffered += chunk;
          const found = buffered.match(/serving MCP at (http:\/\/\S+\/mcp)/);
          if (found) resolve(found[1]);
          if (buffered.length > 65536) buffered = buffered.slice(-4096);
        });
        proc.on("exit", (code) => reject(new Check(`warden serve exited early with ${code}`)));
      }),
      "warden serve reports its address",
    );
    return server;
  }

  async stop() {
    if (this.proc.exitCode !== null) return;
    const exited = new Promise((resolve) => this.proc.on("exit", resolve));
    this.proc.kill("SIGTERM");
    const timer = setTimeout(() => this.proc.kill("SIGKILL"), 10_000);
    await exited;
    clearTimeout(timer);
  }
}

/**
 * A connected client for `agent`. `options.elicit` declares the
 * elicitation capability and answers each request with it;
 * `options.setup(client)` runs before connecting.
 */
async function connect(args, server, agent, options = {}) {
  const capabilities = options.elicit ? { elicitation: { form: {} } } : {};
  const client = new Client({ name: "warden-mcp-ts-tests", version: "0" }, { capabilities });
  client.errors = [];
  client.onerror = (error) => client.errors.push({ at: Date.now(), error });
  if (options.elicit) {
    client.setRequestHandler(ElicitRequestSchema, async (request) => options.elicit(request.params));
  }
  if (options.setup) options.setup(client);
  let transport;
  if (args.transport === "stdio") {
    transport = new StdioClientTransport({
      command: args.warden,
      args: ["serve", "--stdio", "--agent", agent, "--config", args.config, "--state-dir", args.state],
      stderr: "inherit",
    });
  } else {
    transport = new StreamableHTTPClientTransport(new URL(server.url), {
      requestInit: { headers: { Authorization: `Bearer ${TOKENS[agent]}` } },
    });
  }
  await client.connect(transport);
  return client;
}

/** Runs `body` with a client for `agent`, closing it afterwards. */
async function session(args, server, agent, options, body) {
  const client = await connect(args, server, agent, options);
  try {
    await body(client);
  } finally {
    await client.close();
  }
}

async function toolsByName(client) {
  const { tools } = await client.listTools();
  return Object.fromEntries(tools.map((t) => [t.name, t]));
}

// Scenarios about the HTTP transport itself; skipped over stdio.
const HTTP_ONLY = new Set(["bearer_token"]);

const SCENARIOS = {
  async lists_and_calls(args, server) {
    await session(args, server, "alice", {}, async (alice) => {
      const tools = await toolsByName(alice);
      expect([TOOL.read, TOOL.write, TOOL.probe].every((n) => n in tools), "alice sees fs and probe tools", Object.keys(tools));
      expect(tools[TOOL.read].outputSchema?.type === "object", `${TOOL.read} declares an output schema`, tools[TOOL.read]);
      expect(tools[TOOL.read].annotations?.readOnlyHint === true, `${TOOL.read} is read-only`, tools[TOOL.read].annotations);

      // The SDK holds structuredContent to the output schema and throws
      // when it does not match: a result here is a validated one.
      const result = await alice.callTool({ name: TOOL.read, arguments: { path: "hello.txt" } });
      expect(!result.isError, "an allowed call runs", result);
      expect(result.structuredContent !== undefined, "it carries structured content the SDK validated", result);
      expect(JSON.stringify(result.structuredContent).includes("hello from the workspace"), "it returns the file", result);
    });
  },

  async denial(args, server) {
    await session(args, server, "alice", {}, async (alice) => {
      await alice.listTools(); // the SDK now validates fs_read's output
      const result = await alice.callTool({ name: TOOL.read, arguments: { path: "/etc/shadow" } });
      const env = readableError(result, "a denied call is an error result, not an exception");
      expect(env.error_type === "PermissionDenied", "it is a permission denial", env);
      expect(env.message.includes("/etc/shadow"), "the reason names the call", env);
    });
    await session(args, server, "bob", {}, async (bob) => {
      const tools = await toolsByName(bob);
      expect(TOOL.read in tools && !(TOOL.probe in tools), "bob's level shows fewer tools", Object.keys(tools));
      const result = await bob.callTool({ name: TOOL.probe, arguments: { action: "noop" } });
      const env = readableError(result, "bob calling a tool he cannot see gets an error result");
      expect(env.domain_code === "denied_by_category", "it says the category is not his", env);
    });
  },

  async tool_error(args, server) {
    await session(args, server, "alice", {}, async (alice) => {
      await alice.listTools();
      const result = await alice.callTool({ name: TOOL.read, arguments: { path: "missing.txt" } });
      const env = readableError(result, "a tool's own error is an error result");
      expect(env.message.includes("missing.txt"), "the message names the file", env);
    });
  },

  async elicitation(args, server) {
    const asked = [];
    const elicit = (params) => {
      asked.push(params);
      return { action: "accept", content: { decision: "allow_once" } };
    };
    await session(args, server, "alice", { elicit }, async (alice) => {
      await alice.listTools();
      const result = await alice.callTool({ name: TOOL.write, arguments: { path: "elicited.txt", content: "approved" } });
      expect(!result.isError, "an ask answered through the elicitation handler runs", result);
      expect(asked.length === 1, "the person was asked once", asked);
      expect(asked[0].requestedSchema?.properties?.decision !== undefined, "the form asks for a decision", asked[0]);
      expect(existsSync(join(args.workspace, "elicited.txt")), "the write happened");
    });
  },

  async pending_approval(args, server) {
    await session(args, server, "alice", {}, async (alice) => {
      await alice.listTools();
      const call = () => alice.callTool({ name: TOOL.write, arguments: { path: "pending.txt", content: "later" } });
      let env = readableError(await call(), "without elicitation an ask is an error result");
      expect(env.domain_code === "approval_pending", "the ask is pending", env);
      const approval = env.message.match(/approval (ap-\d+)/)?.[1];
      expect(approval !== undefined, "the result names the approval", env);
      const listed = warden(args, "approvals", "list", "--state-dir", args.state);
      expect(listed.includes(approval), "warden approvals list shows it", listed);
      warden(args, "approvals", "approve", approval, "--state-dir", args.state);
      const result = await call();
      expect(!result.isError, "the retry after approval runs", result);
      expect(existsSync(join(args.workspace, "pending.txt")), "the write happened");
      env = readableError(await call(), "a second retry is an error result");
      expect(env.domain_code === "approval_pending", "an approval is used once", env);
    });
  },

  async progress(args, server) {
    await session(args, server, "alice", {}, async (alice) => {
      const progress = [];
      const result = await alice.callTool(
        { name: TOOL.probe, arguments: { action: "steps", steps: 5, ms: 20 } },
        undefined,
        { onprogress: (p) => progress.push(p) },
      );
      expect(!result.isError, "a call with progress runs", result);
      // The server sends every step before the result, but SDK 1.x
      // dispatches notifications a microtask after a response read in the
      // same chunk, so the last step can reach onerror as an unknown token
      // instead (typescript-sdk#2580). Count those as arrived, in order.
      const late = alice.errors
        .map((e) => String(e.error).match(/unknown token: (\{.*\})$/s)?.[1])
        .filter(Boolean)
        .map((json) => JSON.parse(json).params);
      const seen = [...progress, ...late].map((p) => p.progress);
      expect(seen.join() === "1,2,3,4,5", "every step's progress arrives in order", { progress, late });
      expect(progress.length >= 4 && progress.every((p) => p.total === 5), "onprogress sees the steps with their total", progress);
    });
  },

  async cancel(args, server) {
    await session(args, server, "alice", {}, async (alice) => {
      const controller = new AbortController();
      let running;
      const started = new Promise((resolve) => (running = resolve));
      const call = alice.callTool(
        { name: TOOL.probe, arguments: { action: "steps", steps: 400, ms: 50 } },
        undefined,
        { signal: controller.signal, onprogress: running },
      );
      const outcome = call.then(
        (result) => ({ result }),
        (error) => ({ error }),
      );
      await within(30_000, started, "the long call reports progress");
      controller.abort("the user changed their mind");
      const cancelledAt = Date.now();
      const { result, error } = await outcome;
      expect(error !== undefined, "an aborted call rejects in the client", result);
      // Progress for a cancelled request reaches the SDK as an unknown
      // token. A call still running would report one every 50 ms.
      await sleep(1000);
      const late = alice.errors
        .filter((e) => /progress notification for an unknown token/.test(String(e.error)))
        .map((e) => e.at - cancelledAt);
      expect(late.every((ms) => ms <= 500), "the cancelled call stops running", late);
      const after = await alice.callTool({ name: TOOL.probe, arguments: { action: "noop" } });
      expect(!after.isError, "the session serves on after a cancellation", after);
    });
  },

  async list_changed(args, server) {
    const changes = [];
    let heard = () => {};
    const setup = (client) =>
      client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
        changes.push(Date.now());
        heard();
      });
    await session(args, server, "alice", { setup }, async (alice) => {
      expect(alice.getServerCapabilities()?.tools?.listChanged === true, "the server offers tools/list_changed", alice.getServerCapabilities());
      let names = Object.keys(await toolsByName(alice));
      expect(!names.includes(TOOL.helloCountLines), "the extra plugin is not loaded yet", names);

      const after = async (what, ...argv) => {
        const next = new Promise((resolve) => (heard = resolve));
        warden(args, "plugin", ...argv, "--config", args.config, "--state-dir", args.state);
        await within(10_000, next, `tools/list_changed arrives after ${what}`);
        expect(true, `tools/list_changed arrives after ${what}`);
      };
      await after("install", "install", args.extraPlugin);
      const tools = await toolsByName(alice);
      expect(TOOL.helloCountLines in tools, "the installed plugin's tool is listed", Object.keys(tools));
      await after("remove", "remove", "hello", "--actor", "mcp-ts-test", "--confirm", "--reason", "the test is done with it");
      names = Object.keys(await toolsByName(alice));
      expect(!names.includes(TOOL.helloCountLines), "the removed plugin's tool is gone", names);
    });
  },

  async bearer_token(args, server) {
    const client = new Client({ name: "warden-mcp-ts-tests", version: "0" });
    const transport = new StreamableHTTPClientTransport(new URL(server.url), {
      requestInit: { headers: { Authorization: "Bearer wrong-token-0123456789" } },
    });
    const refused = await client.connect(transport).then(
      () => undefined,
      (error) => error,
    );
    expect(refused !== undefined && /401/.test(String(refused?.code ?? refused)), "a wrong bearer token is refused with 401", String(refused));
    await client.close();
  },
};

async function main() {
  const { values, positionals } = parseArgs({
    options: {
      transport: { type: "string" },
      warden: { type: "string" },
      config: { type: "string" },
      state: { type: "string" },
      workspace: { type: "string" },
      "extra-plugin": { type: "string" },
    },
    allowPositionals: true,
  });
  for (const name of ["transport", "warden", "config", "state", "workspace", "extra-plugin"]) {
    if (!values[name]) throw new Error(`--${name} is required`);
  }
  if (!["stdio", "http"].includes(values.transport)) throw new Error("--transport is stdio or http");
  const args = { ...values, extraPlugin: values["extra-plugin"] };
  const names = positionals.length ? positionals : Object.keys(SCENARIOS);
  for (const name of names) {
    if (!(name in SCENARIOS)) throw new Error(`no scenario ${name}; there are ${Object.keys(SCENARIOS).join(", ")}`);
  }

  const server = args.transport === "http" ? await HttpServer.start(args) : undefined;
  try {
    for (const name of names) {
      if (HTTP_ONLY.has(name) && args.transport !== "http") {
        console.log(`# ${name}: HTTP only, skipped over ${args.transport}`);
        continue;
      }
      console.log(`# ${name} over ${args.transport}`);
      await SCENARIOS[name](args, server);
    }
  } catch (failed) {
    console.log(`FAILED - ${failed instanceof Check ? failed.message : failed?.stack ?? failed}`);
    return 1;
  } finally {
    await server?.stop();
  }
  console.log("all checks passed");
  return 0;
}

process.exitCode = await main();
