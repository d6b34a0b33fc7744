// The try page of one agent (a2a_flask, A2A_TRY_PAGE). Talks A2A 1.0
// JSON-RPC to the agent's endpoint beside this page ("a2a"), with the key
// typed in, kept in this closure only. Everything an agent or a caller
// wrote is put in the page as text (textContent), never parsed as HTML; the
// page's Content-Security-Policy enforces Trusted Types, so no HTML sink
// could be used by mistake.
(function () {
  "use strict";
  var POLL_MS = 1000;
  var HISTORY = 20;
  var key = "";
  var keyless = false;     // the card lists no security scheme (A2A_AUTH=off)
  var extended = false;    // the card says an extended card is there for callers
  var current = null;      // the task shown
  var pollTimer = null;
  var rpcId = 0;

  function $(id) { return document.getElementById(id); }

  function el(tag, text, className) {
    var node = document.createElement(tag);
    if (text !== undefined && text !== null) { node.textContent = String(text); }
    if (className) { node.className = className; }
    return node;
  }

  function clear(node) {
    while (node.firstChild) { node.removeChild(node.firstChild); }
  }

  function stateName(state) {
    return String(state || "").replace(/^TASK_STATE_/, "").toLowerCase().replace(/_/g, "-");
  }

  function roleName(role) {
    return String(role || "").replace(/^ROLE_/, "").toLowerCase();
  }

  function newId() {
    var bytes = new Uint8Array(16);
    window.crypto.getRandomValues(bytes);
    return "try-" + Array.prototype.map.call(bytes, function (b) {
      return ("0" + b.toString(16)).slice(-2);
    }).join("");
  }

  function showError(text) {
    var box = $("error");
    box.textContent = text;
    box.hidden = false;
  }

  function hideError() {
    $("error").hidden = true;
    $("error").textContent = "";
  }

  // An HTTP or JSON-RPC failure, worded for a person.
  function Failure(status, code, message) {
    this.status = status;
    this.code = code;
    this.message = message;
  }
  Failure.prototype.toString = function () {
    var head = this.status && this.status !== 200
      ? "HTTP " + this.status + (this.status === 401 ? " Unauthorized" : this.status === 403 ? " Forbidden" : "")
      : "Error";
    if (this.code !== undefined && this.code !== null) { head += " (" + this.code + ")"; }
    var text = head + ": " + this.message;
    if (this.status === 401) { text += " Check the API key above."; }
    return text;
  };

  function parse(response) {
    return response.text().then(function (body) {
      var data = null;
      try { data = JSON.parse(body); } catch (ignored) { data = null; }
      return data;
    });
  }

  function authHeaders(headers) {
    if (key) { headers.Authorization = "Bearer " + key; }
    return headers;
  }

  function rpc(method, params) {
    rpcId += 1;
    return fetch("a2a", {
      method: "POST",
      credentials: "omit",  // a 401's Basic challenge then opens no login dialog
      headers: authHeaders({"Content-Type": "application/json", "A2A-Version": "1.0"}),
      body: JSON.stringify({jsonrpc: "2.0", id: rpcId, method: method, params: params})
    }).then(function (response) {
      return parse(response).then(function (data) {
        if (data && data.error) {
          throw new Failure(response.status, data.error.code, data.error.message);
        }
        if (!response.ok || !data) {
          var message = data && data.message ? data.message : "the service answered " + response.status;
          throw new Failure(response.status, data ? data.code : null, message);
        }
        return data.result;
      });
    });
  }

  // -- the card ---------------------------------------------------------------

  function fact(list, name, value) {
    if (value === undefined || value === null || value === "") { return; }
    list.appendChild(el("dt", name));
    list.appendChild(el("dd", value));
  }

  function schemeText(name, scheme) {
    var api = scheme.apiKeySecurityScheme;
    var http = scheme.httpAuthSecurityScheme;
    if (api || scheme.type === "apiKey") {
      return "API key in the " + ((api && api.name) || scheme.name) + " header";
    }
    if (http || scheme.type === "http") {
      var kind = String((http && http.scheme) || scheme.scheme || "").toLowerCase();
      if (kind === "bearer") { return "Authorization: Bearer <key or token>"; }
      if (kind === "basic") { return "HTTP Basic (a user name and password)"; }
      return "HTTP " + kind;
    }
    return name;
  }

  function showCard(card) {
    $("agent-name").textContent = card.name || "Agent";
    $("agent-description").textContent = card.description || "";
    document.title = "Try " + (card.name || "an agent");
    var facts = $("card-facts");
    clear(facts);
    fact(facts, "Version", card.version);
    var versions = {};
    (card.supportedInterfaces || []).forEach(function (i) { versions[i.protocolVersion] = true; });
    if (card.protocolVersion) { versions[card.protocolVersion.replace(/\.0$/, "")] = true; }
    fact(facts, "A2A versions", Object.keys(versions).sort().join(", "));
    fact(facts, "Input", (card.defaultInputModes || []).join(", "));
    fact(facts, "Output", (card.defaultOutputModes || []).join(", "));
    var caps = card.capabilities || {};
    fact(facts, "Streaming", caps.streaming ? "yes" : "no (send, then poll the task)");
    extended = Boolean(caps.extendedAgentCard || card.supportsAuthenticatedExtendedCard);
    fact(facts, "Extended card", extended ? "for callers with credentials (shown once your key is in)" : "no");

    var skills = $("skills");
    clear(skills);
    (card.skills || []).forEach(function (skill) {
      var item = el("li");
      item.appendChild(el("strong", skill.name || skill.id));
      item.appendChild(el("span", " (" + skill.id + ")", "muted"));
      if (skill.description) { item.appendChild(el("div", skill.description)); }
      var tags = el("div");
      (skill.tags || []).forEach(function (tag) { tags.appendChild(el("span", tag, "tag")); });
      if (skill.examples && skill.examples.length) {
        tags.appendChild(el("span", "examples: " + skill.examples.join(" | "), "muted"));
      }
      item.appendChild(tags);
      skills.appendChild(item);
    });
    if (!skills.firstChild) { skills.appendChild(el("li", "No skills listed.", "muted")); }

    var interfaces = $("interfaces");
    clear(interfaces);
    (card.supportedInterfaces || []).forEach(function (i) {
      var item = el("li");
      item.appendChild(el("span", i.protocolBinding + " " + i.protocolVersion + ": ", "role"));
      item.appendChild(el("code", i.url));
      interfaces.appendChild(item);
    });

    var auth = $("auth");
    clear(auth);
    var schemes = card.securitySchemes || {};
    Object.keys(schemes).forEach(function (name) {
      var item = el("li");
      item.appendChild(el("span", schemeText(name, schemes[name]), "role"));
      if (schemes[name].description) { item.appendChild(el("span", schemes[name].description, "muted")); }
      auth.appendChild(item);
    });
    if (!auth.firstChild) {
      keyless = true;
      auth.appendChild(el("li", "No credentials needed: authentication is off on this service."));
      loadTasks();
    } else {
      auth.appendChild(el("li", "A key: flask --app yourapp a2a keys create (run where your app's folder is).", "muted"));
    }
    $("card-status").textContent = "";
  }

  function loadCard() {
    return fetch(".well-known/agent-card.json",
                 {credentials: "omit", headers: authHeaders({})})
      .then(function (response) {
        return parse(response).then(function (data) {
          if (!response.ok || !data) {
            throw new Failure(response.status, data ? data.code : null,
                              data && data.message ? data.message : "no card");
          }
          showCard(data);
        });
      })
      .catch(function (failure) {
        $("card-status").textContent = "The card could not be read: " + String(failure);
      });
  }

  // The extended card (its skills for callers with credentials), once a key is in.
  function loadExtendedCard() {
    if (!extended || !key) { return Promise.resolve(); }
    return rpc("GetExtendedAgentCard", {}).then(function (card) {
      showCard(card);
      $("card-status").textContent = "The extended card, shown to callers with credentials.";
    }).catch(function (failure) {
      $("card-status").textContent = "The extended card could not be read: " + String(failure);
    });
  }

  // -- a task -----------------------------------------------------------------

  function partsText(parts) {
    return (parts || []).map(function (part) {
      if (part.text !== undefined) { return part.text; }
      if (part.data !== undefined) { return JSON.stringify(part.data, null, 2); }
      if (part.url !== undefined) { return "[file " + (part.filename || "") + " " + part.url + "]"; }
      if (part.raw !== undefined) { return "[file " + (part.filename || "") + ", " + (part.mediaType || "bytes") + "]"; }
      return JSON.stringify(part);
    }).join("\n");
  }

  function working(task) {
    var state = stateName(task.status && task.status.state);
    return state === "submitted" || state === "working";
  }

  function showTask(task) {
    current = task;
    $("answer").hidden = false;
    var state = stateName(task.status && task.status.state);
    $("state").textContent = state;
    $("state").setAttribute("data-state", state);
    $("task-id").textContent = task.id;
    $("context-id").textContent = task.contextId || "";
    $("status-text").textContent = task.status && task.status.message ? partsText(task.status.message.parts) : "";
    var artifacts = $("artifacts");
    clear(artifacts);
    (task.artifacts || []).forEach(function (artifact) {
      artifacts.appendChild(el("div", artifact.name || artifact.artifactId, "role"));
      artifacts.appendChild(el("pre", partsText(artifact.parts), "artifact"));
    });
    if (!artifacts.firstChild) { artifacts.appendChild(el("p", "None yet.", "muted")); }
    var history = $("history");
    clear(history);
    (task.history || []).forEach(function (message) {
      var item = el("li");
      item.appendChild(el("span", roleName(message.role) + ":", "role"));
      item.appendChild(el("pre", partsText(message.parts)));
      history.appendChild(item);
    });
    $("continuing").textContent = state === "input-required" || state === "auth-required"
      ? "The agent asks for more: your next message continues task " + task.id + "."
      : task.contextId ? "Your next message starts a new task in the same conversation." : "";
    $("polling").textContent = working(task) ? "checking again every second\u2026" : "";
  }

  function stopPolling() {
    if (pollTimer !== null) { window.clearTimeout(pollTimer); pollTimer = null; }
  }

  function poll(taskId) {
    stopPolling();
    pollTimer = window.setTimeout(function () {
      pollTimer = null;
      rpc("GetTask", {id: taskId, historyLength: HISTORY}).then(function (task) {
        if (!current || current.id !== taskId) { return; }
        showTask(task);
        if (working(task)) { poll(taskId); } else { loadTasks(); }
      }).catch(function (failure) { showError(String(failure)); });
    }, POLL_MS);
  }

  function open(taskId) {
    stopPolling();
    hideError();
    return rpc("GetTask", {id: taskId, historyLength: HISTORY}).then(function (task) {
      showTask(task);
      if (working(task)) { poll(task.id); }
    }).catch(function (failure) { showError(String(failure)); });
  }

  function send(event) {
    event.preventDefault();
    hideError();
    stopPolling();
    var text = $("text").value;
    var message = {messageId: newId(), role: "ROLE_USER", parts: [{text: text}]};
    if (current) {
      var state = stateName(current.status && current.status.state);
      if (state === "input-required" || state === "auth-required") { message.taskId = current.id; }
      if (current.contextId) { message.contextId = current.contextId; }
    }
    $("send").disabled = true;
    rpc("SendMessage", {message: message, configuration: {returnImmediately: true, historyLength: HISTORY}})
      .then(function (result) {
        $("text").value = "";
        if (result && result.task) {
          showTask(result.task);
          if (working(result.task)) { poll(result.task.id); }
        } else if (result && result.message) {
          $("answer").hidden = false;
          $("status-text").textContent = partsText(result.message.parts);
        }
        loadTasks();
      })
      .catch(function (failure) { showError(String(failure)); })
      .then(function () { $("send").disabled = false; });
  }

  // -- the caller's tasks -----------------------------------------------------

  function loadTasks() {
    var status = $("recent-status");
    if (!key && !keyless) {
      status.textContent = "Enter your key to list your tasks.";
      return Promise.resolve();
    }
    status.textContent = "Loading\u2026";
    return rpc("ListTasks", {pageSize: 10, historyLength: 0}).then(function (result) {
      var body = $("tasks").tBodies[0];
      clear(body);
      (result.tasks || []).forEach(function (task) {
        var row = el("tr");
        var cell = el("td");
        var button = el("button", task.id, "mono");
        button.type = "button";
        button.addEventListener("click", function () { open(task.id); });
        cell.appendChild(button);
        row.appendChild(cell);
        var state = stateName(task.status && task.status.state);
        var stateCell = el("td");
        var badge = el("span", state, "state");
        badge.setAttribute("data-state", state);
        stateCell.appendChild(badge);
        row.appendChild(stateCell);
        row.appendChild(el("td", task.status && task.status.timestamp));
        row.appendChild(el("td", task.status && task.status.message ? partsText(task.status.message.parts) : ""));
        body.appendChild(row);
      });
      status.textContent = (result.totalSize || 0) + " task(s) of yours with this agent; the newest " +
        (result.tasks || []).length + " here.";
    }).catch(function (failure) {
      status.textContent = "";
      showError(String(failure));
    });
  }

  $("key").addEventListener("change", function () {
    key = $("key").value.trim();
    hideError();
    loadTasks();
    loadExtendedCard();
  });
  $("send-form").addEventListener("submit", function (event) {
    key = $("key").value.trim();
    send(event);
  });
  $("new-conversation").addEventListener("click", function () {
    stopPolling();
    current = null;
    hideError();
    $("answer").hidden = true;
    $("continuing").textContent = "";
  });
  $("refresh").addEventListener("click", function () {
    key = $("key").value.trim();
    hideError();
    loadTasks();
  });
  loadCard();
}());
