// The official JS SDK 1.x server (@a2a-js/sdk + express), the agent semantics
// of sdk_server.py: a peer for a2a_flask.client's tests.
//
//   NODE_PATH=.../js-a2a-sdk-1/node_modules node js_server.mjs PORT [--key KEY]
//       [--header X-API-Key] [--sign-jwk PRIVATE_JWK_JSON --kid KID]
//
// Card at /.well-known/agent-card.json (v0.3-shaped without an A2A-Version
// header, the SDK's legacy switch), JSON-RPC at /a2a/jsonrpc (1.0, and 0.3
// through the SDK's compat layer), HTTP+JSON at /a2a/rest. With a key,
// every route but the card answers 401 without HEADER: KEY. With
// --sign-jwk the card is signed by the SDK's generateAgentCardSignature
// (ES256, the given kid, jku /jwks.json), and /jwks.json serves the public key.
// "chat" stops in input-required (the next message on the task completes it),
// "wait" leaves the task working, anything else is echoed and completes.

import { createRequire } from 'node:module';
import path from 'node:path';

const require = createRequire(path.join(process.env.NODE_PATH, 'x.js'));
const { TaskState, Role } = await import(require.resolve('@a2a-js/sdk'));
const { DefaultRequestHandler, InMemoryTaskStore } = await import(require.resolve('@a2a-js/sdk/server'));
const { jsonRpcHandler, restHandler, agentCardHandler, UserBuilder } =
  await import(require.resolve('@a2a-js/sdk/server/express'));
const { generateAgentCardSignature } = await import(require.resolve('@a2a-js/sdk'));
const express = (await import(require.resolve('express'))).default;
const jose = await import(require.resolve('jose'));

const args = process.argv.slice(2);
const port = Number(args[0]);
const opt = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : fallback;
};
const key = opt('--key', '');
const header = opt('--header', 'X-API-Key');
const signJwk = opt('--sign-jwk', '');
const kid = opt('--kid', 'key-1');
const base = `http://127.0.0.1:${port}`;

const text = (value) => ({ content: { $case: 'text', value } });
const inputOf = (ctx) => ctx.userMessage.parts
  .filter((p) => p.content?.$case === 'text').map((p) => p.content.value).join('\n');
const status = (state, message) => ({ state, message, timestamp: new Date().toISOString() });
const agentMessage = (ctx, value) => ({
  messageId: crypto.randomUUID(), contextId: ctx.contextId, taskId: ctx.taskId,
  role: Role.ROLE_AGENT, parts: [text(value)], metadata: undefined, extensions: [],
  referenceTaskIds: [],
});

class EchoChat {
  async execute(ctx, bus) {
    const continuing = ctx.task?.status?.state === TaskState.TASK_STATE_INPUT_REQUIRED;
    const input = inputOf(ctx);
    const task = ctx.task ?? {
      id: ctx.taskId, contextId: ctx.contextId, artifacts: [], history: [ctx.userMessage],
      metadata: undefined, status: status(TaskState.TASK_STATE_SUBMITTED),
    };
    let state = TaskState.TASK_STATE_COMPLETED;
    let message;
    if (input === 'chat' && !continuing) {
      state = TaskState.TASK_STATE_INPUT_REQUIRED;
      message = agentMessage(ctx, 'say more');
    } else if (input === 'wait') {
      state = TaskState.TASK_STATE_WORKING;
    } else {
      task.artifacts = [...task.artifacts, {
        artifactId: crypto.randomUUID(), name: 'echo', description: '', parts: [text(input)],
        metadata: undefined, extensions: [],
      }];
    }
    bus.publish({ kind: 'task', data: { ...task, status: status(state, message) } });
    bus.finished();
  }

  async cancelTask(taskId, bus) {
    bus.publish({ kind: 'statusUpdate', data: {
      taskId, contextId: '', status: status(TaskState.TASK_STATE_CANCELED), metadata: undefined,
    } });
    bus.finished();
  }
}

const card = {
  name: 'echo', description: "Echoes; 'chat' asks for more; 'wait' keeps working.",
  supportedInterfaces: [
    { url: `${base}/a2a/jsonrpc`, protocolBinding: 'JSONRPC', protocolVersion: '1.0', tenant: '' },
    { url: `${base}/a2a/rest`, protocolBinding: 'HTTP+JSON', protocolVersion: '1.0', tenant: '' },
    { url: `${base}/a2a/jsonrpc`, protocolBinding: 'JSONRPC', protocolVersion: '0.3', tenant: '' },
  ],
  version: '1.0.0', defaultInputModes: ['text'], defaultOutputModes: ['text'],
  capabilities: { streaming: false, pushNotifications: false, extensions: [] },
  skills: [{ id: 'echo', name: 'echo', description: 'echo', tags: ['echo'], examples: [],
    inputModes: [], outputModes: [], securityRequirements: [] }],
  securitySchemes: {}, securityRequirements: [], signatures: [],
};
if (key) {
  // the ProtoJSON form: the 1.0 card route serves the object as given
  card.securitySchemes.apiKey = { apiKeySecurityScheme: { location: 'header', name: header } };
  card.securityRequirements = [{ schemes: { apiKey: { list: [] } } }];
}

let signer;
let publicJwk;
if (signJwk) {
  const privateJwk = JSON.parse(signJwk);
  publicJwk = { ...privateJwk };
  delete publicJwk.d;
  const privateKey = await jose.importJWK(privateJwk, 'ES256');
  signer = generateAgentCardSignature(privateKey, {
    alg: 'ES256', typ: 'JOSE', kid, jku: `${base}/jwks.json` });
}

const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), new EchoChat(),
  undefined, undefined, undefined, undefined, signer);
const app = express();
app.get('/jwks.json', (req, res) => res.json({ keys: publicJwk ? [{ ...publicJwk, kid }] : [] }));
app.use('/.well-known/agent-card.json',
  agentCardHandler({ agentCardProvider: handler, legacyCompat: { enabled: true } }));
app.use((req, res, next) => {
  if (key && req.get(header) !== key) {
    res.status(401).json({ error: 'missing or wrong API key' });
    return;
  }
  next();
});
app.use('/a2a/jsonrpc', jsonRpcHandler({
  requestHandler: handler, userBuilder: UserBuilder.noAuthentication, legacyCompat: { enabled: true } }));
app.use('/a2a/rest', restHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
app.listen(port, '127.0.0.1');
