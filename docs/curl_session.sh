#!/usr/bin/env bash
# Replays the curl session of docs/curl-session.md against a running demo
# service and prints it as Markdown: `bash docs/curl_session.sh
# http://127.0.0.1:8000 "$KEY"` (tests/docs/test_docs_examples.py checks the page).
set -euo pipefail
BASE=${1:-http://127.0.0.1:8000}
KEY=${2:?usage: curl_session.sh BASE_URL API_KEY}
# Pretty JSON that keeps small objects and lists on one line.
PRETTY='
import json, sys
def dump(v, ind=""):
    flat = json.dumps(v, ensure_ascii=False)
    if len(flat) + len(ind) <= 88 or not isinstance(v, (dict, list)) or not v:
        return flat
    inner = ind + "  "
    if isinstance(v, dict):
        items = [inner + json.dumps(k) + ": " + dump(x, inner) for k, x in v.items()]
        return "{\n" + ",\n".join(items) + "\n" + ind + "}"
    return "[\n" + ",\n".join(inner + dump(x, inner) for x in v) + "\n" + ind + "]"
print(dump(json.load(sys.stdin)))
'
show() {  # show TITLE CURL-ARGS...: print the command and its pretty answer
  local title=$1; shift
  printf '%s\n\n```console\n$ curl -s %s\n' "$title" "$*"
  eval "curl -s $*" | python3 -c "$PRETTY"
  printf '```\n\n'
}
rpc() { echo "\$BASE/api/v1/agents/$1/a2a -H \"Authorization: Bearer \$KEY\" -H 'Content-Type: application/json' -d '$2'"; }
show "The default agent's card (public):" "\$BASE/.well-known/agent-card.json"
show "\`message/send\` to \`echo\`: one turn, \`completed\`:" "$(rpc echo '{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"role":"user","messageId":"readme-1","parts":[{"kind":"text","text":"hello"}]}}}')"
task=$(curl -s "$BASE/api/v1/agents/chat/a2a" -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' \
  -d '{"jsonrpc":"2.0","id":2,"method":"message/send","params":{"message":{"role":"user","messageId":"readme-2","parts":[{"kind":"text","text":"hi, I am Ada"}]}}}' \
  | python3 -c 'import json,sys; print(json.load(sys.stdin)["result"]["id"])')
printf '`message/send` to `chat` (sent as above, with text "hi, I am Ada") left task `%s` in `input-required`. Continue it by `taskId`:\n\n' "$task"
show "" "$(rpc chat '{"jsonrpc":"2.0","id":3,"method":"message/send","params":{"message":{"role":"user","messageId":"readme-3","taskId":"'"$task"'","parts":[{"kind":"text","text":"what did I say?"}]},"configuration":{"historyLength":2}}}')"
show "\`tasks/get\`, the last message only:" "$(rpc chat '{"jsonrpc":"2.0","id":4,"method":"tasks/get","params":{"id":"'"$task"'","historyLength":1}}')"
show "\`tasks/cancel\` of the waiting task:" "$(rpc chat '{"jsonrpc":"2.0","id":5,"method":"tasks/cancel","params":{"id":"'"$task"'"}}')"
show "Cancel it again: it is terminal (\`-32002\`):" "$(rpc chat '{"jsonrpc":"2.0","id":6,"method":"tasks/cancel","params":{"id":"'"$task"'"}}')"
show "An unknown task (\`-32001\`):" "$(rpc chat '{"jsonrpc":"2.0","id":7,"method":"tasks/get","params":{"id":"task_nope"}}')"
show "Streaming is not supported (\`-32004\`), and says what to do instead:" "$(rpc chat '{"jsonrpc":"2.0","id":8,"method":"message/stream","params":{}}')"
show "The extended card, for a caller with a key:" "$(rpc chat '{"jsonrpc":"2.0","id":9,"method":"agent/getAuthenticatedExtendedCard"}')"
printf 'No credentials: HTTP 401, a challenge, and a bare error object:\n\n```console\n'
printf '$ curl -s -i $BASE/api/v1/agents/chat/a2a -d %s\n' "'{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"tasks/get\",\"params\":{\"id\":\"$task\"}}'"
curl -s -i "$BASE/api/v1/agents/chat/a2a" -d '{"jsonrpc":"2.0","id":10,"method":"tasks/get","params":{"id":"'"$task"'"}}' \
  | tr -d '\r' | grep -v -i '^date:\|^server:\|^connection:'
printf '\n```\n'
