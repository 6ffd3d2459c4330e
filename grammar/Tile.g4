// The syntax of .tile files: Python 3 (3.8-3.10 level).
//
// The lexer rules below produce raw tokens; src/parse/IndentLexer.cpp wraps the generated lexer and turns
// physical lines into logical ones: it drops newlines inside brackets and on blank lines, and emits
// INDENT/DEDENT from the indentation stack. It also reports lexical errors (ERROR_CHAR, UNTERMINATED_STRING).
//
// The parser rules are written to be (nearly) LL(1) so that SLL prediction decides almost everything with
// one token of lookahead: where Python's grammar needs to look past a whole expression (keyword arguments,
// dict items, slices, parameters) the rules are factored, and the AST builder checks what the grammar
// accepts too liberally (assignment targets, argument and parameter order, mixed dict/set items).
grammar Tile;

// MATCH and CASE are the soft keywords `match` and `case` where they begin a match statement or one of its
// case blocks: the indentation lexer retypes a NAME token (everywhere else they are names, `match = 3`).
tokens { INDENT, DEDENT, MATCH, CASE }

// ================================================================ entry points

file_input : stmt* EOF ;
eval_input : testlist_star_expr EOF ;

// ================================================================ statements

stmt : simple_stmts | compound_stmt ;

simple_stmts : simple_stmt (';' simple_stmt)* ';'? NEWLINE ;

simple_stmt
    : expr_stmt
    | del_stmt
    | pass_stmt
    | break_stmt
    | continue_stmt
    | return_stmt
    | raise_stmt
    | yield_expr
    | import_name
    | import_from
    | global_stmt
    | nonlocal_stmt
    | assert_stmt
    ;

expr_stmt
    : testlist_star_expr
      ( annassign
      | augassign (yield_expr | testlist_star_expr)
      | ('=' (yield_expr | testlist_star_expr))*
      )
    ;
annassign : ':' test ('=' (yield_expr | testlist_star_expr))? ;
augassign
    : op=('+=' | '-=' | '*=' | '@=' | '/=' | '%=' | '&=' | '|=' | '^=' | '<<=' | '>>=' | '**=' | '//=') ;

del_stmt      : 'del' exprlist ;
pass_stmt     : 'pass' ;
break_stmt    : 'break' ;
continue_stmt : 'continue' ;
return_stmt   : 'return' testlist_star_expr? ;
raise_stmt    : 'raise' (test ('from' test)?)? ;
global_stmt   : 'global' NAME (',' NAME)* ;
nonlocal_stmt : 'nonlocal' NAME (',' NAME)* ;
assert_stmt   : 'assert' test (',' test)? ;

import_name    : 'import' dotted_as_name (',' dotted_as_name)* ;
dotted_as_name : dotted_name ('as' NAME)? ;
import_from
    : 'from' (import_dots* dotted_name | import_dots+) 'import'
      ( '*'
      | '(' import_as_name (',' import_as_name)* ','? ')'
      | import_as_name (',' import_as_name)*
      )
    ;
import_dots    : '.' | '...' ;
import_as_name : NAME ('as' NAME)? ;
dotted_name    : NAME ('.' NAME)* ;

compound_stmt
    : if_stmt
    | while_stmt
    | for_stmt
    | try_stmt
    | with_stmt
    | funcdef
    | classdef
    | decorated
    | async_stmt
    | match_stmt
    ;

if_stmt     : 'if' namedexpr_test ':' block elif_clause* else_clause? ;
elif_clause : 'elif' namedexpr_test ':' block ;
else_clause : 'else' ':' block ;
while_stmt  : 'while' namedexpr_test ':' block else_clause? ;
for_stmt    : 'for' exprlist 'in' testlist_star_expr ':' block else_clause? ;

try_stmt       : 'try' ':' block (except_clause+ else_clause? finally_clause? | finally_clause) ;
except_clause  : 'except' (test ('as' NAME)?)? ':' block ;
finally_clause : 'finally' ':' block ;

// `with (a as b, c):` (3.10) versus `with (a, b) as c:`: the first alternative wins when both apply, as in
// CPython's PEG grammar.
with_stmt
    : 'with' ( '(' with_item (',' with_item)* ','? ')' | with_item (',' with_item)* ) ':' block ;
with_item : test ('as' expr)? ;

funcdef    : 'def' NAME parameters ('->' test)? ':' block ;
parameters : '(' (param (',' param)* ','?)? ')' ;
param
    : NAME (':' test)? ('=' test)?
    | '*' (NAME (':' test)?)?
    | '**' NAME (':' test)?
    | '/'
    ;

classdef  : 'class' NAME ('(' arglist? ')')? ':' block ;
decorated : decorator+ (classdef | funcdef | ASYNC funcdef) ;
decorator : '@' namedexpr_test NEWLINE ;
async_stmt: ASYNC (funcdef | with_stmt | for_stmt) ;

block : simple_stmts | NEWLINE INDENT stmt+ DEDENT ;

// ---------------------------------------------------------------- match (PEP 634)
// The patterns are factored as the expressions are: a NAME with its dotted tail and call parentheses covers
// capture, wildcard (`_`), value (`a.b`) and class patterns, parentheses cover groups and tuple sequences;
// the builder tells them apart and checks what the grammar accepts too liberally (`*x` outside a sequence,
// keyword patterns before positional ones, `case x | 1` with an irrefutable alternative first).
match_stmt   : MATCH match_subject ':' NEWLINE INDENT case_block+ DEDENT ;
match_subject: (namedexpr_test | star_expr) (',' (namedexpr_test | star_expr))* ','? ;
case_block   : CASE pattern_list ('if' namedexpr_test)? ':' block ;
pattern_list : pattern_item (',' pattern_item)* ','? ;
pattern_item : '*' NAME | pattern ;
pattern      : closed_pattern ('|' closed_pattern)* ('as' NAME)? ;
closed_pattern
    : '-'? (INTEGER | FLOAT_NUMBER | IMAG_NUMBER) (op=('+' | '-') IMAG_NUMBER)?
    | STRING+
    | 'None'
    | 'True'
    | 'False'
    | NAME ('.' NAME)* ('(' (pattern_arg (',' pattern_arg)* ','?)? ')')?
    | '(' pattern_list? ')'
    | '[' pattern_list? ']'
    | '{' (mapping_item (',' mapping_item)* ','?)? '}'
    ;
pattern_arg  : NAME '=' pattern | pattern ;
mapping_item : '**' NAME | closed_pattern ':' pattern ;

// ================================================================ expressions

namedexpr_test : test (':=' test)? ;
test           : or_test ('if' or_test 'else' test)? | lambdef ;
test_nocond    : or_test | lambdef_nocond ;
lambdef        : 'lambda' lambda_params? ':' test ;
lambdef_nocond : 'lambda' lambda_params? ':' test_nocond ;
lambda_params  : lambda_param (',' lambda_param)* ','? ;
lambda_param   : NAME ('=' test)? | '*' NAME? | '**' NAME | '/' ;

// Comparisons and the boolean operators, tightest first. `a < b < c` parses as nested comparisons and the
// builder flattens the chain (a parenthesized operand is an `expr`, so `(a < b) < c` stays apart).
or_test
    : expr
    | or_test comp_op or_test
    | 'not' or_test
    | or_test 'and' or_test
    | or_test 'or' or_test
    ;
comp_op   : '<' | '>' | '==' | '>=' | '<=' | '!=' | 'in' | 'not' 'in' | 'is' 'not'? ;
star_expr : '*' expr ;

// Atoms, trailers and the arithmetic and bitwise operators, tightest first, in one left-recursive rule:
// a name or a number is one parse-tree node, which keeps parsing and building fast. ANTLR turns the
// recursion into loops, so `a + b + c` and `a.b.c` do not recurse in the parser.
expr
    : NAME
    | INTEGER
    | FLOAT_NUMBER
    | IMAG_NUMBER
    | STRING+
    | '...'
    | 'None'
    | 'True'
    | 'False'
    | '(' (yield_expr | testlist_comp)? ')'
    | '[' testlist_comp? ']'
    | '{' dictorsetmaker? '}'
    | expr '.' NAME
    | expr '(' arglist? ')'
    | expr '[' subscriptlist ']'
    | AWAIT expr
    | <assoc=right> expr '**' expr
    | op=('+' | '-' | '~') expr
    | expr op=('*' | '@' | '/' | '%' | '//') expr
    | expr op=('+' | '-') expr
    | expr op=('<<' | '>>') expr
    | expr op='&' expr
    | expr op='^' expr
    | expr op='|' expr
    ;

testlist_comp  : (namedexpr_test | star_expr) (comp_for | (',' (namedexpr_test | star_expr))* ','?) ;
subscriptlist  : subscript (',' subscript)* ','? ;
subscript      : test (':=' test | slice_tail)? | slice_tail | star_expr ;
slice_tail     : ':' test? (':' test?)? ;
exprlist       : (expr | star_expr) (',' (expr | star_expr))* ','? ;
testlist_star_expr : (test | star_expr) (',' (test | star_expr))* ','? ;

dictorsetmaker : dict_item (comp_for | (',' dict_item)* ','?) ;
dict_item      : test (':' test | ':=' test)? | '**' expr | star_expr ;

arglist  : argument (',' argument)* ','? ;
argument : test ('=' test | ':=' test | comp_for)? | '*' test | '**' test ;

comp_for  : ASYNC? 'for' exprlist 'in' or_test comp_iter? ;
comp_iter : comp_for | comp_if ;
comp_if   : 'if' test_nocond comp_iter? ;

yield_expr : 'yield' ('from' test | testlist_star_expr)? ;

// ================================================================ lexer

FALSE    : 'False' ;
NONE     : 'None' ;
TRUE     : 'True' ;
AND      : 'and' ;
AS       : 'as' ;
ASSERT   : 'assert' ;
ASYNC    : 'async' ;
AWAIT    : 'await' ;
BREAK    : 'break' ;
CLASS    : 'class' ;
CONTINUE : 'continue' ;
DEF      : 'def' ;
DEL      : 'del' ;
ELIF     : 'elif' ;
ELSE     : 'else' ;
EXCEPT   : 'except' ;
FINALLY  : 'finally' ;
FOR      : 'for' ;
FROM     : 'from' ;
GLOBAL   : 'global' ;
IF       : 'if' ;
IMPORT   : 'import' ;
IN       : 'in' ;
IS       : 'is' ;
LAMBDA   : 'lambda' ;
NONLOCAL : 'nonlocal' ;
NOT      : 'not' ;
OR       : 'or' ;
PASS     : 'pass' ;
RAISE    : 'raise' ;
RETURN   : 'return' ;
TRY      : 'try' ;
WHILE    : 'while' ;
WITH     : 'with' ;
YIELD    : 'yield' ;

// A raw newline; the indentation lexer decides whether it ends a logical line.
NEWLINE : '\r'? '\n' ;

// Strings of every prefix (r, u, b, f and the two-letter combinations, any case), short or triple-quoted.
// The builder decodes them; f-strings stay single tokens.
STRING : STRING_PREFIX? (SHORT_STRING | LONG_STRING) ;
// A short string that reaches the end of the line: always shorter than a terminated one, so it only wins
// when there is no closing quote.
UNTERMINATED_STRING : STRING_PREFIX? ('\'' SQ_ITEM* | '"' DQ_ITEM*) ;

INTEGER
    : DIGIT_PART
    | '0' [xX] ('_'? [0-9a-fA-F])+
    | '0' [oO] ('_'? [0-7])+
    | '0' [bB] ('_'? [01])+
    ;
FLOAT_NUMBER : POINT_FLOAT | EXPONENT_FLOAT ;
IMAG_NUMBER  : (FLOAT_NUMBER | DIGIT_PART) [jJ] ;

ELLIPSIS : '...' ;
DOT      : '.' ;
STAR     : '*' ;
OPEN_PAREN  : '(' ;
CLOSE_PAREN : ')' ;
COMMA    : ',' ;
COLON    : ':' ;
SEMI     : ';' ;
POWER    : '**' ;
ASSIGN   : '=' ;
OPEN_BRACK  : '[' ;
CLOSE_BRACK : ']' ;
OR_OP    : '|' ;
XOR      : '^' ;
AND_OP   : '&' ;
LSHIFT   : '<<' ;
RSHIFT   : '>>' ;
ADD      : '+' ;
MINUS    : '-' ;
DIV      : '/' ;
MOD      : '%' ;
IDIV     : '//' ;
NOT_OP   : '~' ;
OPEN_BRACE  : '{' ;
CLOSE_BRACE : '}' ;
LT       : '<' ;
GT       : '>' ;
EQ       : '==' ;
GE       : '>=' ;
LE       : '<=' ;
NE       : '!=' ;
AT       : '@' ;
ARROW    : '->' ;
WALRUS   : ':=' ;
ADD_ASSIGN    : '+=' ;
SUB_ASSIGN    : '-=' ;
MULT_ASSIGN   : '*=' ;
AT_ASSIGN     : '@=' ;
DIV_ASSIGN    : '/=' ;
MOD_ASSIGN    : '%=' ;
AND_ASSIGN    : '&=' ;
OR_ASSIGN     : '|=' ;
XOR_ASSIGN    : '^=' ;
LSHIFT_ASSIGN : '<<=' ;
RSHIFT_ASSIGN : '>>=' ;
POWER_ASSIGN  : '**=' ;
IDIV_ASSIGN   : '//=' ;

NAME : ID_START ID_CONTINUE* ;

// A lone carriage return counts as white space (the source manager splits lines at '\n' only).
SKIP_WS   : [ \t\f\r]+ -> skip ;
COMMENT   : '#' ~[\r\n]* -> skip ;
LINE_JOIN : '\\' '\r'? '\n' -> skip ;

// Anything else: the indentation lexer reports it ("invalid character '$'").
ERROR_CHAR : . ;

fragment STRING_PREFIX : [rRuUbBfF] | [rR] [bBfF] | [bBfF] [rR] ;
fragment SHORT_STRING  : '\'' SQ_ITEM* '\'' | '"' DQ_ITEM* '"' ;
fragment SQ_ITEM       : ~[\\\r\n'] | ESCAPE ;
fragment DQ_ITEM       : ~[\\\r\n"] | ESCAPE ;
fragment ESCAPE        : '\\' ('\r\n' | .) ;
fragment LONG_STRING   : '\'\'\'' LONG_ITEM*? '\'\'\'' | '"""' LONG_ITEM*? '"""' ;
fragment LONG_ITEM     : ~'\\' | ESCAPE ;

fragment DIGIT_PART     : [0-9] ('_'? [0-9])* ;
fragment POINT_FLOAT    : DIGIT_PART? '.' DIGIT_PART | DIGIT_PART '.' ;
fragment EXPONENT_FLOAT : (DIGIT_PART | POINT_FLOAT) [eE] [+-]? DIGIT_PART ;

fragment ID_START    : [_\p{XID_Start}] ;
fragment ID_CONTINUE : [\p{XID_Continue}] ;
