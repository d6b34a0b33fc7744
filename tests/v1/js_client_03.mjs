// The official JS SDK 0.3 client (@a2a-js/sdk 0.3.x) given base URLs, for
// the "which URL to give a client" tests. Needs NODE_PATH to the cached npm
// install of clients.py (clients.run_js_03 sets it):
//
//   node js_client_03.mjs URL [URL ...]
//
// For each URL: ClientFactory().createFromUrl(URL) (the card found the SDK's
// default way), then message/send "hello". Prints one JSON line per URL:
// {"base", "ok", "card_urls": [what was fetched], "state"} or "error".
import { createRequire } from "node:module";
import { randomUUID } from "node:crypto";
import { pathToFileURL } from "node:url";
import path from "node:path";

const require = createRequire(path.join(process.env.NODE_PATH || process.cwd(), "x.js"));
const load = (spec) => import(pathToFileURL(require.resolve(spec)).href);
const { ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory } =
  await load("@a2a-js/sdk/client");

for (const base of process.argv.slice(2)) {
  const fetched = [];
  const fetchImpl = async (input, init) => {
    fetched.push({ url: String(input), method: (init && init.method) || "GET" });
    const response = await fetch(input, init);
    fetched[fetched.length - 1].status = response.status;
    return response;
  };
  const out = { base, ok: false };
  try {
    const factory = new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new JsonRpcTransportFactory({ fetchImpl })],
      cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
    }));
    const client = await factory.createFromUrl(base);
    const answer = await client.sendMessage({ message: { kind: "message", role: "user",
      messageId: randomUUID(), parts: [{ kind: "text", text: "hello" }] } });
    Object.assign(out, { ok: true, state: answer.status ? answer.status.state : answer.kind });
  } catch (e) {
    out.error = String(e && e.message ? e.message : e);
  }
  out.fetched = fetched;
  process.stdout.write(JSON.stringify(out) + "\n");
}
