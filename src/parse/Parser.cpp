/// \file
/// parseModule / parseExpression: decode, lex, parse, build, report.
///
/// The parse runs twice only when it has to: first with SLL prediction and the bail-out error strategy
/// (fast, and exact for a correct file with this grammar), then, if that fails, with full LL prediction and
/// SyntaxErrorStrategy, which recovers and records every error with a readable message.
#include "tilec/Parser.h"

#include "parse/ParseInternal.h"

namespace tilec {

using namespace parse;

namespace {

/// Runs one of the grammar's entry rules (`rule`) with the two-stage strategy. Returns null when the
/// input has syntax errors (they are in `errs`).
template <class Ctx>
Ctx *runParser(GuardedParser &parser, antlr4::CommonTokenStream &tokens, const SourceText &src, SyntaxErrors &errs,
               Ctx *(grammar::TileParser::*rule)()) {
    parser.removeErrorListeners();
    try {
        parser.getInterpreter<antlr4::atn::ParserATNSimulator>()->setPredictionMode(antlr4::atn::PredictionMode::SLL);
        parser.setErrorHandler(std::make_shared<antlr4::BailErrorStrategy>());
        return (parser.*rule)(); // the caller still checks for the lexer's errors
    } catch (const antlr4::ParseCancellationException &) {
        // SLL failed: a real error, or (rarely) a decision SLL cannot make; LL tells which.
    } catch (const NestingTooDeep &d) {
        antlr4::Token *t = tokens.get(std::min(d.tokenIndex, tokens.size() - 1));
        errs.add(SyntaxError::Fatal, src.tokenBegin(t), src.tokenRange(t), "expression is too deeply nested");
        return nullptr;
    }
    size_t before = errs.size();
    tokens.seek(0);
    parser.reset();
    parser.getInterpreter<antlr4::atn::ParserATNSimulator>()->setPredictionMode(antlr4::atn::PredictionMode::LL);
    parser.setErrorHandler(std::make_shared<SyntaxErrorStrategy>(src, errs));
    try {
        Ctx *tree = (parser.*rule)();
        if (errs.size() == before) return tree;
    } catch (const EnoughErrors &) {
        // The errors so far are reported; the rest of the file is not worth the recovery time.
    } catch (const NestingTooDeep &d) {
        antlr4::Token *t = tokens.get(std::min(d.tokenIndex, tokens.size() - 1));
        errs.add(SyntaxError::Fatal, src.tokenBegin(t), src.tokenRange(t), "expression is too deeply nested");
    }
    return nullptr;
}

/// Everything the parse of one file owns; the parse tree lives as long as the parser.
struct Session {
    SyntaxErrors errs;
    SourceText src;
    std::unique_ptr<DecodedStream> input;
    std::unique_ptr<IndentLexer> lexer;
    std::unique_ptr<antlr4::CommonTokenStream> tokens;
    std::unique_ptr<GuardedParser> parser;

    Session(int file, const DiagnosticEngine &diag) : src(file, diag.sources().text(file)) {}

    bool start(bool expressionMode) {
        if (!src.decode(errs)) return false;
        input = std::make_unique<DecodedStream>(src.codePoints());
        lexer = std::make_unique<IndentLexer>(input.get(), src, errs, expressionMode);
        tokens = std::make_unique<antlr4::CommonTokenStream>(lexer.get());
        tokens->fill();
        parser = std::make_unique<GuardedParser>(tokens.get());
        return true;
    }
};

/// Unexpected exceptions from the ANTLR runtime are our bug, never the input's: they become internal
/// errors. TooManyErrors (the error limit) passes through to the driver.
template <class F> auto shielded(F &&f) -> decltype(f()) {
    try {
        return f();
    } catch (const TooManyErrors &) {
        throw;
    } catch (const InternalError &) {
        throw;
    } catch (const std::exception &e) {
        internalError(__FILE__, __LINE__, std::string("the parser threw: ") + e.what());
    }
}

} // namespace

std::optional<ast::Module> parseModule(int file, DiagnosticEngine &diag) {
    setCurrentPhase("parse");
    return shielded([&]() -> std::optional<ast::Module> {
        Session s(file, diag);
        if (s.start(false)) {
            auto *tree = runParser(*s.parser, *s.tokens, s.src, s.errs, &grammar::TileParser::file_input);
            if (tree && s.errs.empty()) {
                ast::Module m = buildModule(tree, *s.tokens, s.src, s.errs);
                if (s.errs.empty()) return m;
            }
        }
        s.errs.flush(diag);
        return std::nullopt;
    });
}

ast::ExprP parseExpression(int file, DiagnosticEngine &diag) {
    setCurrentPhase("parse");
    return shielded([&]() -> ast::ExprP {
        Session s(file, diag);
        if (s.start(true)) {
            auto *tree = runParser(*s.parser, *s.tokens, s.src, s.errs, &grammar::TileParser::eval_input);
            if (tree && s.errs.empty()) {
                ast::ExprP e = buildExpression(tree, *s.tokens, s.src, s.errs);
                if (e && s.errs.empty()) return e;
            }
        }
        s.errs.flush(diag);
        return nullptr;
    });
}

} // namespace tilec
