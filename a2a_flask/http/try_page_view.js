// The try page's view: the DOM and text helpers of try_page.js, which hold
// no state and make no calls. try_page.py puts this file, then try_page.js,
// in one closure ("use strict"): nothing here is global. Everything an agent
// or a caller wrote goes into the page as text (textContent).

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

  // ``text`` into ``node``, each `quoted` span as a <code> (the Markdown
  // of card descriptions and of our messages), all of it as text.
  function putText(node, text) {
    clear(node);
    String(text === undefined || text === null ? "" : text).split("`").forEach(function (piece, i, pieces) {
      if (i % 2 === 1 && i < pieces.length - 1) {
        node.appendChild(el("code", piece));
      } else {
        node.appendChild(document.createTextNode(i % 2 === 1 ? "`" + piece : piece));
      }
    });
    return node;
  }

  function richEl(tag, text, className) {
    return putText(el(tag, null, className), text);
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

  function showCardFacts(card, hasExtended) {
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
    fact(facts, "Extended card", hasExtended ? "for callers with credentials (shown once your key is in)" : "no");
  }

  function listSkills(card) {
    var skills = $("skills");
    clear(skills);
    (card.skills || []).forEach(function (skill) {
      var item = el("li");
      item.appendChild(el("strong", skill.name || skill.id));
      item.appendChild(el("span", " (" + skill.id + ")", "muted"));
      if (skill.description) { item.appendChild(richEl("div", skill.description)); }
      var tags = el("div");
      (skill.tags || []).forEach(function (tag) { tags.appendChild(el("span", tag, "tag")); });
      if (skill.examples && skill.examples.length) {
        tags.appendChild(el("span", "examples: " + skill.examples.join(" | "), "muted"));
      }
      item.appendChild(tags);
      skills.appendChild(item);
    });
    if (!skills.firstChild) { skills.appendChild(el("li", "No skills listed.", "muted")); }
  }

  function listInterfaces(card) {
    var interfaces = $("interfaces");
    clear(interfaces);
    (card.supportedInterfaces || []).forEach(function (i) {
      var item = el("li");
      item.appendChild(el("span", i.protocolBinding + " " + i.protocolVersion + ": ", "role"));
      item.appendChild(el("code", i.url));
      interfaces.appendChild(item);
    });
  }

  // The card's security schemes; false when it lists none (auth is off).
  function listSchemes(card) {
    var auth = $("auth");
    clear(auth);
    var schemes = card.securitySchemes || {};
    Object.keys(schemes).forEach(function (name) {
      var item = el("li");
      item.appendChild(el("span", schemeText(name, schemes[name]), "role"));
      if (schemes[name].description) { item.appendChild(richEl("span", schemes[name].description, "muted")); }
      auth.appendChild(item);
    });
    return Boolean(auth.firstChild);
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

  function showTaskView(task) {
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

  // One row of the caller's tasks: its id is a button that opens it.
  function taskRow(task, onOpen) {
    var row = el("tr");
    row.setAttribute("data-task", task.id);
    var cell = el("td");
    var button = el("button", task.id, "mono");
    button.type = "button";
    button.addEventListener("click", function () { onOpen(task.id); });
    cell.appendChild(button);
    row.appendChild(cell);
    row.appendChild(el("td"));
    row.appendChild(el("td"));
    row.appendChild(el("td"));
    fillRow(row, task);
    return row;
  }

  // The state, time and status of ``task`` in its row.
  function fillRow(row, task) {
    var cells = row.cells;
    var state = stateName(task.status && task.status.state);
    clear(cells[1]);
    var badge = el("span", state, "state");
    badge.setAttribute("data-state", state);
    cells[1].appendChild(badge);
    cells[2].textContent = (task.status && task.status.timestamp) || "";
    cells[3].textContent = task.status && task.status.message ? partsText(task.status.message.parts) : "";
  }

  // Of two reads of one task, the later (by its status's time; b when even).
  function newer(a, b) {
    var ta = (a && a.status && a.status.timestamp) || "";
    var tb = (b && b.status && b.status.timestamp) || "";
    return tb >= ta ? b : a;
  }
