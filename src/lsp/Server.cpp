/// \file
/// The language server's protocol side (include/tilec/Lsp.h): JSON-RPC 2.0 messages framed by Content-Length
/// headers, the lifecycle (initialize, shutdown, exit), the open documents, and one worker thread that
/// analyses a document 200 ms after its last change (the newest text wins: a result for an older text is
/// dropped) and publishes the diagnostics. Requests are answered from the analyses already made, so they
/// never wait for the compiler except to read another module for go to definition.
#include "lsp/LspImpl.h"

#include "tilec/Target.h"

#include <chrono>
#include <condition_variable>
#include <istream>
#include <map>
#include <mutex>
#include <ostream>
#include <pthread.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>

namespace tilec::lsp {

namespace {

using Clock = std::chrono::steady_clock;

/// JSON-RPC's error codes, and the protocol's for a request before `initialize`.
enum RpcCode { ParseError = -32700, InvalidRequest = -32600, MethodNotFound = -32601, InvalidParams = -32602,
               InternalRpcError = -32603, ServerNotInitialized = -32002 };

struct RpcError {
    int code;
    std::string message;
};

/// Messages larger than this are refused (and skipped) rather than read into memory.
constexpr size_t kMaxMessage = 256u << 20;

struct Document {
    std::string uri, path, text;
    Value version;                ///< as the client numbered it (published with the diagnostics)
    uint64_t generation = 0;      ///< new at every change: an analysis of an older text is stale
    bool dirty = false;           ///< an analysis is due
    Clock::time_point due;
    std::shared_ptr<const Analysis> parsed;    ///< the last analysis whose text parsed (go to definition)
    std::shared_ptr<const Analysis> evaluated; ///< the last one that got through the front end (hover)
    std::vector<std::string> otherUris;        ///< imported files it published diagnostics for
};

/// The byte offset of a protocol position in `text` (its end when past it).
size_t offsetOf(const std::string &text, const Value &position) {
    double line = position.at("line").asNumber("line"), character = position.at("character").asNumber("character");
    if (!(line >= 0 && character >= 0 && line < 1e9 && character < 1e9)) throw std::invalid_argument("bad position");
    size_t b = 0;
    for (int l = 0; l < (int)line; ++l) {
        size_t nl = text.find('\n', b);
        if (nl == std::string::npos) return text.size();
        b = nl + 1;
    }
    return b + byteOffset(lineAt(std::string_view(text).substr(b), 0), (int)character);
}

/// `change` (a contentChanges entry) applied to `text`: the whole text, or a range replaced (the server asks
/// for whole texts; a client may still send ranges).
std::string applyChange(const std::string &text, const Value &change) {
    const std::string &replacement = change.at("text").asString("text");
    const Value *range = change.find("range");
    if (!range || range->kind == Value::Null) return replacement;
    size_t b = offsetOf(text, range->at("start")), e = offsetOf(text, range->at("end"));
    if (e < b) std::swap(b, e);
    return text.substr(0, b) + replacement + text.substr(e);
}

Value notificationJson(const char *method, Value params) {
    return Value::object().set("jsonrpc", Value::string("2.0")).set("method", Value::string(method)).set("params", std::move(params));
}

class Server {
  public:
    Server(const LspOptions &o, std::istream &in, std::ostream &out, std::ostream &log)
        : in_(in), out_(out), log_(log), debounce_(o.debounceMs) {
        settings_.archs = o.archs;
        settings_.importDirs = o.importDirs;
    }
    int run();

  private:
    std::optional<std::string> readMessage();
    void send(const Value &msg);
    void respond(const Value &id, Value result);
    void respondError(const Value &id, int code, const std::string &message);
    bool handle(const std::string &body);
    Value request(const std::string &method, const Value &params);
    void notification(const std::string &method, const Value &params);
    Value initialize(const Value &params);
    void configure(const Value &options);
    void schedule(Document &d, Clock::time_point due);
    void publish(Document &d, const Analysis &a);
    std::pair<Document, bool> snapshot(const Value &params);
    void work();
    static void *workerMain(void *self) {
        static_cast<Server *>(self)->work();
        return nullptr;
    }

    std::istream &in_;
    std::ostream &out_, &log_;
    std::chrono::milliseconds debounce_;
    std::mutex outMu_;      ///< one message at a time on the output
    std::mutex compilerMu_; ///< one thread in the compiler at a time (the parser's caches are shared)
    std::mutex mu_;         ///< everything below
    std::condition_variable wake_;
    Settings settings_;
    std::map<std::string, Document> docs_;
    uint64_t generations_ = 0;
    bool initialized_ = false, shutdown_ = false, stop_ = false;
};

std::optional<std::string> Server::readMessage() {
    for (;;) {
        // Headers: `Name: value` lines up to an empty one; only Content-Length matters.
        long long length = -1;
        bool any = false;
        std::string line;
        while (std::getline(in_, line)) {
            if (!line.empty() && line.back() == '\r') line.pop_back();
            if (line.empty()) {
                if (any) break;
                continue; // stray blank lines between messages
            }
            any = true;
            auto colon = line.find(':');
            std::string name = line.substr(0, colon);
            for (auto &c : name) c = (char)std::tolower((unsigned char)c);
            if (colon != std::string::npos && name == "content-length") {
                try {
                    size_t used = 0;
                    std::string v = line.substr(colon + 1);
                    length = std::stoll(v, &used);
                    if (v.find_first_not_of(" \t", used) != std::string::npos) length = -2;
                } catch (const std::exception &) {
                    length = -2;
                }
            }
        }
        if (!in_) return std::nullopt;
        if (length < 0) {
            respondError(Value(), ParseError, "a message without a valid Content-Length header");
            continue;
        }
        std::string body;
        if ((size_t)length > kMaxMessage) {
            in_.ignore((std::streamsize)length);
            if (!in_) return std::nullopt;
            respondError(Value(), InvalidRequest, "message of " + std::to_string(length) + " bytes is too large");
            continue;
        }
        body.resize((size_t)length);
        in_.read(body.data(), length);
        if (in_.gcount() != length) return std::nullopt;
        return body;
    }
}

void Server::send(const Value &msg) {
    std::string body = json::writeCompact(msg);
    std::lock_guard<std::mutex> lock(outMu_);
    out_ << "Content-Length: " << body.size() << "\r\n\r\n" << body;
    out_.flush();
}

void Server::respond(const Value &id, Value result) {
    send(Value::object().set("jsonrpc", Value::string("2.0")).set("id", id).set("result", std::move(result)));
}

void Server::respondError(const Value &id, int code, const std::string &message) {
    Value error = Value::object().set("code", Value::number(code)).set("message", Value::string(message));
    send(Value::object().set("jsonrpc", Value::string("2.0")).set("id", id).set("error", std::move(error)));
}

/// Answers one message; true when it is `exit`.
bool Server::handle(const std::string &body) {
    Value msg;
    try {
        msg = json::parse(body);
    } catch (const std::invalid_argument &e) {
        respondError(Value(), ParseError, e.what());
        return false;
    }
    const Value *method = msg.kind == Value::Object ? msg.find("method") : nullptr;
    const Value *id = msg.kind == Value::Object ? msg.find("id") : nullptr;
    bool goodId = id && (id->kind == Value::Number || id->kind == Value::String);
    if (msg.kind == Value::Object && !method && (msg.find("result") || msg.find("error"))) return false; // a response
    if (!method || method->kind != Value::String || (id && !goodId && id->kind != Value::Null)) {
        respondError(goodId ? *id : Value(), InvalidRequest, "not a JSON-RPC request or notification");
        return false;
    }
    const Value *p = msg.find("params");
    Value params = p ? *p : Value::object();
    const std::string &name = method->str;
    if (!id) {
        if (name == "exit") return true;
        try {
            notification(name, params);
        } catch (const std::exception &e) {
            log_ << "tilec lsp: " << name << ": " << e.what() << "\n"; // notifications get no answer
        }
        return false;
    }
    try {
        respond(*id, request(name, params));
    } catch (const RpcError &e) {
        respondError(*id, e.code, e.message);
    } catch (const std::invalid_argument &e) {
        respondError(*id, InvalidParams, name + ": " + e.what());
    } catch (const std::exception &e) {
        respondError(*id, InternalRpcError, name + ": " + e.what());
    }
    return false;
}

Value Server::request(const std::string &method, const Value &params) {
    if (method == "initialize") {
        if (initialized_) throw RpcError{InvalidRequest, "initialize was already received"};
        return initialize(params);
    }
    if (!initialized_) throw RpcError{ServerNotInitialized, method + " before initialize"};
    if (shutdown_) throw RpcError{InvalidRequest, method + " after shutdown"};
    if (method == "shutdown") {
        shutdown_ = true;
        return Value();
    }
    if (method == "textDocument/hover") {
        Position at = positionOf(params);
        auto [d, open] = snapshot(params);
        if (!open || !d.evaluated) return Value();
        std::string text = hoverText(*d.evaluated, d.text, at);
        if (text.empty()) return Value();
        return Value::object().set("contents",
                                   Value::object().set("kind", Value::string("markdown")).set("value", Value::string(text)));
    }
    if (method == "textDocument/completion") {
        Position at = positionOf(params);
        auto [d, open] = snapshot(params);
        if (!open) return Value();
        return completions(d.parsed.get(), d.text, at);
    }
    if (method == "textDocument/definition") {
        Position at = positionOf(params);
        auto [d, open] = snapshot(params);
        if (!open || !d.parsed) return Value();
        Settings settings;
        {
            std::lock_guard<std::mutex> lock(mu_);
            settings = settings_;
        }
        std::lock_guard<std::mutex> compiler(compilerMu_);
        return definition(*d.parsed->module, *d.parsed->sources, d.uri, d.path, d.text, at, settings);
    }
    throw RpcError{MethodNotFound, "unknown method " + method};
}

Value Server::initialize(const Value &params) {
    if (const Value *o = params.kind == Value::Object ? params.find("initializationOptions") : nullptr)
        if (o->kind == Value::Object) configure(*o);
    initialized_ = true;
    Value sync = Value::object().set("openClose", Value::boolean(true)).set("change", Value::number(1))
                     .set("save", Value::boolean(true));
    Value trigger = Value::array();
    trigger.items.push_back(Value::string("."));
    Value caps = Value::object()
                     .set("positionEncoding", Value::string("utf-16"))
                     .set("textDocumentSync", std::move(sync))
                     .set("hoverProvider", Value::boolean(true))
                     .set("completionProvider", Value::object().set("triggerCharacters", std::move(trigger)))
                     .set("definitionProvider", Value::boolean(true));
    return Value::object().set("capabilities", std::move(caps))
        .set("serverInfo", Value::object().set("name", Value::string("tilec")).set("version", Value::string(TILEC_VERSION_STRING)));
}

/// initializationOptions (or workspace/didChangeConfiguration's settings.tilec): `arch` (a name, a
/// comma-separated list or an array) and `importDirs`. Unknown targets are reported and left out.
void Server::configure(const Value &options) {
    std::lock_guard<std::mutex> lock(mu_);
    if (const Value *arch = options.find("arch")) {
        std::vector<std::string> names;
        auto split = [&](const std::string &s) {
            for (size_t b = 0; b <= s.size();) {
                size_t e = std::min(s.find(',', b), s.size());
                if (e > b) names.push_back(s.substr(b, e - b));
                b = e + 1;
            }
        };
        if (arch->kind == Value::String) split(arch->str);
        for (auto &a : arch->kind == Value::Array ? arch->items : std::vector<Value>{})
            if (a.kind == Value::String) split(a.str);
        std::vector<std::string> good;
        for (auto &n : names) {
            if (Target::parse(n)) good.push_back(n);
            else
                send(notificationJson("window/showMessage",
                                      Value::object().set("type", Value::number(1))
                                          .set("message", Value::string("tilec: unknown target '" + n + "' (known: " +
                                                                        Target::knownNames() + ")"))));
        }
        if (!good.empty()) settings_.archs = good;
    }
    if (const Value *dirs = options.find("importDirs"); dirs && dirs->kind == Value::Array) {
        settings_.importDirs.clear();
        for (auto &d : dirs->items)
            if (d.kind == Value::String) settings_.importDirs.push_back(d.str);
    }
    for (auto &[uri, d] : docs_) schedule(d, Clock::now());
}

void Server::schedule(Document &d, Clock::time_point due) {
    d.generation = ++generations_; // server-wide: a document closed and opened again never repeats one
    d.dirty = true;
    d.due = due;
    wake_.notify_all();
}

void Server::notification(const std::string &method, const Value &params) {
    if (method == "exit" || !initialized_ || shutdown_) return;
    if (method == "textDocument/didOpen") {
        const Value &td = params.at("textDocument");
        Document d;
        d.uri = td.at("uri").asString("uri");
        d.path = pathFromUri(d.uri);
        d.text = td.at("text").asString("text");
        if (const Value *v = td.find("version")) d.version = *v;
        std::lock_guard<std::mutex> lock(mu_);
        std::string key = d.uri;
        Document &doc = docs_[key] = std::move(d);
        schedule(doc, Clock::now());
    } else if (method == "textDocument/didChange") {
        const Value &td = params.at("textDocument");
        const std::string &uri = td.at("uri").asString("uri");
        std::lock_guard<std::mutex> lock(mu_);
        auto it = docs_.find(uri);
        if (it == docs_.end()) throw std::invalid_argument("didChange of " + uri + ", which is not open");
        std::string text = it->second.text;
        for (auto &c : params.at("contentChanges").asArray("contentChanges")) text = applyChange(text, c);
        it->second.text = std::move(text);
        if (const Value *v = td.find("version")) it->second.version = *v;
        schedule(it->second, Clock::now() + debounce_);
    } else if (method == "textDocument/didSave") {
        // Another file's imports may read the saved one: every document is analysed again.
        std::lock_guard<std::mutex> lock(mu_);
        for (auto &[uri, d] : docs_) schedule(d, Clock::now() + debounce_);
    } else if (method == "textDocument/didClose") {
        const std::string &uri = params.at("textDocument").at("uri").asString("uri");
        std::lock_guard<std::mutex> lock(mu_);
        auto it = docs_.find(uri);
        if (it == docs_.end()) return;
        std::vector<std::string> uris = it->second.otherUris;
        uris.push_back(uri);
        docs_.erase(it);
        for (auto &u : uris)
            send(notificationJson("textDocument/publishDiagnostics",
                                  Value::object().set("uri", Value::string(u)).set("diagnostics", Value::array())));
    } else if (method == "workspace/didChangeConfiguration") {
        const Value *settings = params.find("settings");
        const Value *mine = settings && settings->kind == Value::Object ? settings->find("tilec") : nullptr;
        if (mine && mine->kind == Value::Object) configure(*mine);
    }
    // Anything else ($/cancelRequest, $/setTrace, initialized, ...) needs nothing.
}

/// A copy of the request's document (its analyses are shared and immutable), and whether it is open.
std::pair<Document, bool> Server::snapshot(const Value &params) {
    const std::string &uri = params.at("textDocument").at("uri").asString("uri");
    std::lock_guard<std::mutex> lock(mu_);
    auto it = docs_.find(uri);
    if (it == docs_.end()) return {Document{}, false};
    return {it->second, true};
}

int Server::run() {
    // The worker gets a stack as large as the main thread's could be: the evaluator's recursion limit is
    // half the process's stack limit (at most 64 MiB).
    rlimit rl{};
    size_t stack = 256u << 20;
    if (getrlimit(RLIMIT_STACK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) stack = std::max<size_t>(rl.rlim_cur, 16u << 20);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, std::min<size_t>(stack, 256u << 20));
    pthread_t worker;
    bool started = pthread_create(&worker, &attr, &Server::workerMain, this) == 0;
    pthread_attr_destroy(&attr);
    if (!started) {
        log_ << "tilec lsp: cannot start the analysis thread\n";
        return 1;
    }
    while (auto body = readMessage())
        if (handle(*body)) break;
    {
        std::lock_guard<std::mutex> lock(mu_);
        stop_ = true;
        wake_.notify_all();
    }
    pthread_join(worker, nullptr);
    return shutdown_ ? 0 : 1;
}

void Server::work() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stop_) {
        Document *next = nullptr;
        for (auto &[uri, d] : docs_)
            if (d.dirty && (!next || d.due < next->due)) next = &d;
        if (!next) {
            wake_.wait(lock);
            continue;
        }
        if (Clock::now() < next->due) {
            wake_.wait_until(lock, next->due);
            continue;
        }
        next->dirty = false;
        std::string uri = next->uri, path = next->path, text = next->text;
        uint64_t generation = next->generation;
        Settings settings = settings_;
        lock.unlock();
        std::shared_ptr<const Analysis> a;
        {
            std::lock_guard<std::mutex> compiler(compilerMu_);
            a = std::make_shared<const Analysis>(analyze(path, text, settings));
        }
        lock.lock();
        auto it = docs_.find(uri);
        if (it == docs_.end() || it->second.generation != generation) continue; // closed, or changed since
        Document &d = it->second;
        if (a->module) d.parsed = a;
        if (a->evaluated) d.evaluated = a;
        publish(d, *a);
    }
}

void Server::publish(Document &d, const Analysis &a) {
    const SourceManager &sm = *a.sources;
    auto uriOf = [&](int file) { return file <= 0 ? d.uri : uriFromPath(sm.name(file)); };
    auto textOf = [&](int file) { return file < 0 ? std::string_view() : std::string_view(sm.text(file)); };
    std::map<std::string, Value> byUri{{d.uri, Value::array()}};
    for (auto &diag : a.diagnostics) {
        std::string message = diag.message;
        Value related = Value::array();
        for (auto &n : diag.notes) {
            if (!n.range.valid()) {
                message += "\nnote: " + n.message;
                continue;
            }
            Value where = Value::object().set("uri", Value::string(uriOf(n.range.file))).set("range", rangeJson(textOf(n.range.file), n.range));
            related.items.push_back(Value::object().set("location", std::move(where)).set("message", Value::string(n.message)));
        }
        int severity = diag.severity == Severity::Error ? 1 : diag.severity == Severity::Warning ? 2 : 3;
        Value j = Value::object()
                      .set("range", rangeJson(textOf(diag.range.file), diag.range))
                      .set("severity", Value::number(severity))
                      .set("source", Value::string("tilec"))
                      .set("message", Value::string(message));
        if (!related.items.empty()) j.set("relatedInformation", std::move(related));
        byUri.emplace(uriOf(diag.range.file), Value::array()).first->second.items.push_back(std::move(j));
    }
    // An imported file's diagnostics go to that file, unless it is open (its own analysis speaks for it); a
    // file that had some last time and has none now is cleared.
    for (auto &u : d.otherUris) byUri.emplace(u, Value::array());
    d.otherUris.clear();
    for (auto &[uri, list] : byUri) {
        if (uri != d.uri && docs_.count(uri)) continue;
        if (uri != d.uri && !list.items.empty()) d.otherUris.push_back(uri);
        Value params = Value::object().set("uri", Value::string(uri));
        if (uri == d.uri && d.version.kind == Value::Number) params.set("version", d.version);
        send(notificationJson("textDocument/publishDiagnostics", std::move(params.set("diagnostics", std::move(list)))));
    }
}

} // namespace

} // namespace tilec::lsp

namespace tilec {

int runLanguageServer(const LspOptions &opts, std::istream &in, std::ostream &out, std::ostream &log) {
    spdlog::set_level(spdlog::level::off); // standard output carries the protocol alone
    lsp::Server server(opts, in, out, log);
    return server.run();
}

} // namespace tilec
