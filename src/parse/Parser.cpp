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

namespace parse {

void WindowStream::consume() {
    if (p_ >= end_) throw antlr4::IllegalStateException("cannot consume EOF");
    ++p_;
}

size_t WindowStream::LA(ssize_t i) {
    if (i == 0) return 0;
    ssize_t at = i > 0 ? ssize_t(p_) + i - 1 : ssize_t(p_) + i;
    if (at < ssize_t(begin_) || at >= ssize_t(end_)) return antlr4::IntStream::EOF;
    return cps_[size_t(at)];
}

std::string WindowStream::getText(const antlr4::misc::Interval &interval) {
    size_t a = std::max(begin_, size_t(interval.a)), b = std::min(end_, size_t(interval.b) + 1);
    std::u32string part = a < b ? cps_.substr(a, b - a) : std::u32string();
    return antlrcpp::utf32_to_utf8(part);
}

ast::ExprP parseFieldExpression(const SourceText &src, SyntaxErrors &errs, size_t begin, size_t end, int fstringDepth,
                                uintptr_t stackBase) {
    WindowStream input(src.codePoints(), begin, end);
    IndentLexer lexer(&input, src, errs, true);
    antlr4::CommonTokenStream tokens(&lexer);
    tokens.fill();
    GuardedParser parser(&tokens, stackBase);
    size_t before = errs.size();
    auto *tree = runParser(parser, tokens, src, errs, &grammar::TileParser::eval_input);
    errs.notAtEof(before);
    if (!tree || errs.size() != before) return nullptr;
    ast::ExprP e = buildExpression(tree, tokens, src, errs, fstringDepth, stackBase);
    return errs.size() == before ? e : nullptr;
}

} // namespace parse

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
