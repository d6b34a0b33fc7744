// Client scenarios with the official JS SDK 1.x client (@a2a-js/sdk), native
// A2A 1.0: no legacyCompat switch anywhere. Needs NODE_PATH to the cached
// npm install of clients.py (clients.run_js sets it):
//
//   node js_client.mjs --card-url URL [--key KEY] [--header X-API-Key]
//                      [--transport jsonrpc|rest] [--step all|send,...]
//
// --base-url URL instead of --card-url: the card is found the SDK's default
// way from a base URL (resolver.resolve(URL)); when that fails, one "card"
// line with "ok": false is all that is printed.
//
// Prints one JSON line per step, the same shape as py_client.py:
// {"step", "transport", "ok", ...what came back, "error": {"class", "code",
// "reason", "message"}, "wire": [{method, url, status, body}]}. Tasks are
// printed with the SDK's own toJSON (ProtoJSON names).
import { createRequire } from "node:module";
import { randomUUID } from "node:crypto";
import { pathToFileURL } from "node:url";
import path from "node:path";

// Resolve the SDK from NODE_PATH: ESM imports ignore NODE_PATH, require does not.
const require = createRequire(path.join(process.env.NODE_PATH || process.cwd(), "x.js"));
const load = (spec) => import(pathToFileURL(require.resolve(spec)).href);
const sdk = await load("@a2a-js/sdk");
const clientSdk = await load("@a2a-js/sdk/client");
const { Task, Role, ListTasksResponse } = sdk;
const { ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory,
  RestTransportFactory } = clientSdk;

const STEPS = ["card", "send", "multiturn", "get", "list", "cancel", "get_unknown", "cancel_terminal"];
const BINDINGS = { jsonrpc: "JSONRPC", rest: "HTTP+JSON" };

function parseArgs(argv) {
  const args = { key: "", header: "X-API-Key", transport: "jsonrpc", step: "all" };
  for (let i = 0; i < argv.length; i += 2) {
    const name = argv[i].replace(/^--/, "").replace(/-(.)/g, (_, c) => c.toUpperCase());
    if (!(name in args) && name !== "cardUrl" && name !== "baseUrl") {
      throw new Error(`unknown argument ${argv[i]}`);
    }
    args[name] = argv[i + 1];
  }
  if (!args.cardUrl === !args.baseUrl) throw new Error("one of --card-url, --base-url is required");
  if (!(args.transport in BINDINGS)) throw new Error("--transport must be jsonrpc or rest");
  return args;
}

const args = parseArgs(process.argv.slice(2));
const wire = [];

// Adds the key header and records every answer for the proto check.
async function fetchImpl(input, init = {}) {
  const headers = new Headers(init.headers || {});
  if (args.key) headers.set(args.header, args.key);
  const response = await fetch(input, { ...init, headers });
  const text = await response.clone().text();
  let body = text;
  try { body = JSON.parse(text); } catch { /* not JSON: keep the text */ }
  let request = null;
  try { request = JSON.parse(init.body); } catch { /* no JSON body */ }
  wire.push({ method: init.method || "GET", url: String(input), request, status: response.status, body });
  return response;
}

function errorOf(e) {
  return { class: e?.constructor?.name || typeof e, name: e?.name, code: e?.code ?? e?.envelopeCode,
    reason: e?.reason, statusCode: e?.statusCode, message: String(e?.message ?? e) };
}

const taskJSON = (t) => Task.toJSON(t);
const text = (s) => ({ content: { $case: "text", value: s } });

class Scenario {
  constructor(client, card) { this.client = client; this.card = card; }

  async send(s, taskId = "", contextId = "") {
    const result = await this.client.sendMessage({
      message: { messageId: randomUUID(), role: Role.ROLE_USER, parts: [text(s)], taskId, contextId },
    });
    // SendMessageResult is a Task or a Message; a Task has a status
    if (!result || !result.status) throw new Error(`no task in ${JSON.stringify(result)}`);
    return taskJSON(result);
  }

  async card_() { return { card: this.card }; }

  async send_() {
    const task = await this.send("hello");
    return { state: task.status.state, task,
      artifacts_text: (task.artifacts || []).flatMap((a) => (a.parts || []).map((p) => p.text)) };
  }

  async multiturn_() {
    const first = await this.send("chat");
    const second = await this.send("more please", first.id, first.contextId);
    return { first_state: first.status.state, second_state: second.status.state,
      same_task: first.id === second.id, first, second };
  }

  async get_() {
    const task = await this.send("hello");
    const full = taskJSON(await this.client.getTask({ id: task.id }));
    const one = taskJSON(await this.client.getTask({ id: task.id, historyLength: 1 }));
    const zero = taskJSON(await this.client.getTask({ id: task.id, historyLength: 0 }));
    return { state: full.status.state, history_len: (full.history || []).length,
      history_len_1: (one.history || []).length, history_len_0: (zero.history || []).length, task: one };
  }

  async list_() {
    for (let i = 0; i < 3; i++) await this.send(`hello ${i}`);
    const pages = [];
    let token = "";
    do {
      const page = ListTasksResponse.toJSON(await this.client.listTasks({ pageSize: 2, pageToken: token }));
      pages.push({ ids: (page.tasks || []).map((t) => t.id), nextPageToken: page.nextPageToken || "",
        pageSize: page.pageSize, totalSize: page.totalSize });
      token = page.nextPageToken || "";
    } while (token && pages.length < 50);
    const ids = pages.flatMap((p) => p.ids);
    return { pages, count: ids.length, distinct: new Set(ids).size };
  }

  async cancel_() {
    const task = await this.send("chat");
    const canceled = taskJSON(await this.client.cancelTask({ id: task.id }));
    return { before: task.status.state, state: canceled.status.state, task: canceled };
  }

  async get_unknown_() { return this.expectError(this.client.getTask({ id: randomUUID() })); }

  async cancel_terminal_() {
    const task = await this.send("hello");
    return { ...(await this.expectError(this.client.cancelTask({ id: task.id }))),
      task_state: task.status.state };
  }

  async expectError(call) {
    try {
      const answer = await call;
      return { ok: false, unexpected_answer: answer };
    } catch (e) {
      return { error: errorOf(e) };
    }
  }
}

const resolver = new DefaultAgentCardResolver({ fetchImpl });
let card;
try {
  if (args.baseUrl) {
    card = await resolver.resolve(args.baseUrl);
  } else {
    const base = new URL(args.cardUrl);
    card = await resolver.resolve(base.origin, base.pathname);
  }
} catch (e) {
  if (!args.baseUrl) throw e;
  process.stdout.write(JSON.stringify({ step: "card", ok: false, error: errorOf(e), wire }) + "\n");
  process.exit(0);
}
const cardWire = [...wire];
const factory = new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
  transports: [new JsonRpcTransportFactory({ fetchImpl }), new RestTransportFactory({ fetchImpl })],
  preferredTransports: [BINDINGS[args.transport]],
  cardResolver: resolver,
}));
const client = await factory.createFromAgentCard(card);
const scenario = new Scenario(client, card);
const steps = args.step === "all" ? STEPS : args.step.split(",");
for (const step of steps) {
  wire.splice(0, wire.length, ...(step === "card" ? cardWire : []));
  let out;
  try {
    out = { ok: true, ...(await scenario[`${step}_`]()) };
  } catch (e) {
    out = { ok: false, error: errorOf(e) };
  }
  process.stdout.write(JSON.stringify({ step, transport: args.transport, ...out, wire: [...wire] }) + "\n");
}
