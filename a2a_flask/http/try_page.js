// The try page of one agent (a2a_flask, A2A_TRY_PAGE). Talks A2A 1.0
// JSON-RPC to the agent's endpoint beside this page ("a2a"), with the key
// typed in, kept in this closure only. try_page.py puts try_page_view.js
// (the DOM helpers used here) and this file in one closure, "use strict".
// Everything an agent or a caller wrote is put in the page as text
// (textContent), never parsed as HTML; the page's Content-Security-Policy
// enforces Trusted Types, so no HTML sink could be used by mistake.
  var POLL_MS = 1000;
  var HISTORY = 20;
  var key = "";
  var keyless = false;     // the card lists no security scheme (A2A_AUTH=off)
  var extended = false;    // the card says an extended card is there for callers
  var current = null;      // the task shown
  var pollTimer = null;
  var rpcId = 0;

  function showError(text) {
    var box = $("error");
    putText(box, text);
    box.hidden = false;
  }

  function hideError() {
    $("error").hidden = true;
    $("error").textContent = "";
  }

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

  function showCard(card) {
    $("agent-name").textContent = card.name || "Agent";
    putText($("agent-description"), card.description || "");
    document.title = "Try " + (card.name || "an agent");
    var caps = card.capabilities || {};
    extended = Boolean(caps.extendedAgentCard || card.supportsAuthenticatedExtendedCard);
    showCardFacts(card, extended);
    listSkills(card);
    listInterfaces(card);
    if (listSchemes(card)) {
      $("auth").appendChild(richEl("li", "A key: `flask --app yourapp a2a keys create` (run where your app's folder is).", "muted"));
    } else {
      keyless = true;
      $("auth").appendChild(el("li", "No credentials needed: authentication is off on this service."));
      $("key-row").hidden = true;
      $("no-key").hidden = false;
      loadTasks();
      loadAgents();
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

  // The task in the answer, and in its row of the recent tasks: both say
  // the same (the row is not left at the state the list was read in).
  function showTask(task) {
    current = task;
    showTaskView(task);
    var rows = $("tasks").tBodies[0].rows;
    for (var i = 0; i < rows.length; i += 1) {
      if (rows[i].getAttribute("data-task") === task.id) { fillRow(rows[i], task); }
    }
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

  // With authentication on, a send without a key could only be refused:
  // say what to do instead, and send nothing.
  function needsKey() {
    var missing = !key && !keyless;
    $("key-row").classList.toggle("missing", missing);
    return missing;
  }

  function send(event) {
    event.preventDefault();
    hideError();
    if (needsKey()) {
      showError("Type your API key first: this service answers only callers with a key.");
      $("key").focus();
      return;
    }
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
      status.textContent = "Type your key to list your tasks.";
      return Promise.resolve();
    }
    status.textContent = "Loading\u2026";
    return rpc("ListTasks", {pageSize: 10, historyLength: 0}).then(function (result) {
      var body = $("tasks").tBodies[0];
      clear(body);
      (result.tasks || []).forEach(function (task) {
        // The list may have been read before the answer's last poll.
        var shown = current && current.id === task.id ? newer(task, current) : task;
        body.appendChild(taskRow(shown, open));
      });
      status.textContent = (result.totalSize || 0) + " task(s) of yours with this agent; the newest " +
        (result.tasks || []).length + " here.";
    }).catch(function (failure) {
      status.textContent = "";
      showError(String(failure));
    });
  }

  // -- the app's other agents --------------------------------------------------

  // PREFIX/agents: the agents this caller may reach (with the key, if any).
  function loadAgents() {
    var here = window.location.pathname;
    var tree = here.replace(/\/[^\/]+\/?$/, "");
    return fetch(tree, {credentials: "omit", headers: authHeaders({"Accept": "application/json"})})
      .then(function (response) {
        return parse(response).then(function (data) {
          if (!response.ok || !data || !data.agents) { return; }
          var links = $("agent-links");
          clear(links);
          data.agents.forEach(function (agent) {
            var item = el("li");
            var link = el("a", agent.name);
            link.href = tree + "/" + encodeURIComponent(agent.name) + "/";
            if (link.pathname === here) { link.setAttribute("aria-current", "page"); }
            if (agent.description) { link.title = agent.description; }
            item.appendChild(link);
            links.appendChild(item);
          });
          $("agents").hidden = data.agents.length < 2;
        });
      })
      .catch(function () { /* the list is a convenience: the page works without it */ });
  }

  $("key").addEventListener("input", function () {
    if ($("key").value.trim()) { $("key-row").classList.remove("missing"); }
  });
  $("key").addEventListener("change", function () {
    key = $("key").value.trim();
    hideError();
    loadTasks();
    loadExtendedCard();
    loadAgents();
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
