// Verify Agent Card signatures with the official JS SDK 1.x verifier
// (verifyAgentCardSignature of @a2a-js/sdk), as a client does.
//   NODE_PATH=<js-a2a-sdk-1>/node_modules node verify_card.mjs cards.json jwks.json
// cards.json: {"label": card, ...}. Prints {label: {ok, error?, kid, jku}}.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";

// NODE_PATH does not reach ES module imports: resolve from it by hand.
const modules = process.env.NODE_PATH;
const require = createRequire(join(modules, "noop.js"));
const sdk = await import(require.resolve("@a2a-js/sdk"));
const jose = await import(require.resolve("jose"));

const [cardsFile, jwksFile] = process.argv.slice(2);
const cards = JSON.parse(readFileSync(cardsFile, "utf8"));
const jwks = JSON.parse(readFileSync(jwksFile, "utf8"));
const keys = Object.fromEntries(jwks.keys.map((key) => [key.kid, key]));

console.debug = () => {};  // the verifier logs every failed entry
const results = {};
for (const [label, card] of Object.entries(cards)) {
  const seen = {};
  const verify = sdk.verifyAgentCardSignature(async (kid, jku) => {
    Object.assign(seen, { kid, jku });
    return jose.importJWK(keys[kid], keys[kid].alg);
  });
  try {
    await verify(card);
    results[label] = { ok: true, ...seen };
  } catch (error) {
    results[label] = { ok: false, error: String(error.message), ...seen };
  }
}
console.log(JSON.stringify(results));
