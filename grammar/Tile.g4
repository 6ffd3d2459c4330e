// Placeholder: replaced by the full Python 3 grammar.
grammar Tile;
tokens { INDENT, DEDENT }
file_input : NEWLINE* EOF ;
NEWLINE : '\r'? '\n' ;
WS : [ \t]+ -> skip ;
