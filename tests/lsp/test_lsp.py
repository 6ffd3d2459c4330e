#!/usr/bin/env python3
"""Drives `tilec lsp` over stdio as an editor would and checks every answer exactly.

Usage: test_lsp.py PATH/TO/tilec

A user's module (helpers.py) and a kernel file that imports it are written to a temporary folder; the test
opens the kernel, hovers, completes, goes to definitions, then types a shape error, a lowering error and a
syntax error (on a line with non-ASCII text, so columns must be counted in UTF-16), and checks the published
diagnostics, the debouncing (only the newest of quick changes is analysed), bad messages and the lifecycle.
"""
import json
import os
import queue
import subprocess
import sys
import tempfile
import threading

TIMEOUT = 60.0

HELPERS = '''\
"""Tile sizes shared by the kernels."""

def block_sizes():
    return 128, 128, 64
'''

KERNEL = '''\
import tilelang.language as T
from helpers import block_sizes


def matmul(M, N, K):
    block_M, block_N, block_K = block_sizes()

    @T.prim_func
    def kernel(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"),
               C: T.Tensor((M, N), "float16")):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), "float16")
            B_shared = T.alloc_shared((block_K, block_N), "float16")
            C_local = T.alloc_fragment((block_M, block_N), "float32")
            T.clear(C_local)
            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=3):
                T.copy(A[by * block_M, ko * block_K], A_shared)
                T.copy(B[ko * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            T.copy(C_local, C[by * block_M, bx * block_N])
    return kernel


gemm = matmul(1024, 1024, 1024)
'''

# The shape error: C_local one column wider than B_shared's tile.
SHAPE_ERROR = KERNEL.replace('T.alloc_fragment((block_M, block_N), "float32")',
                             'T.alloc_fragment((block_M, block_N + 1), "float32")')

# A kernel the front end accepts and the lowering refuses (layout inference), with a note.
LOWERING_ERROR = '''\
import tilelang.language as T


@T.prim_func
def transpose(X: T.Tensor((64, 64), "float"), Y: T.Tensor((64, 64), "float")):
    with T.Kernel(1, threads=128) as bx:
        f = T.alloc_fragment((64, 64), "float")
        for i, j in T.Parallel(64, 64):
            f[63 - i, j] = X[i, j]
        T.copy(f, Y)
'''

# A syntax error after non-ASCII text: 'é' is 2 bytes and 1 UTF-16 unit, '😀' 4 bytes and 2 units.
SYNTAX_ERROR = KERNEL.replace('gemm = matmul(1024, 1024, 1024)',
                              'gemm = matmul(1024, 1024, 1024)\nlabel = "héllo 😀" + )')


class Client:
    def __init__(self, tilec, cwd):
        self.proc = subprocess.Popen([tilec, 'lsp'], cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE)
        self.messages = queue.Queue()
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        out = self.proc.stdout
        while True:
            headers = {}
            while True:
                line = out.readline()
                if not line:
                    self.messages.put(None)
                    return
                line = line.decode('ascii').rstrip('\r\n')
                if not line:
                    break
                name, value = line.split(':', 1)
                headers[name.strip().lower()] = value.strip()
            body = out.read(int(headers['content-length']))
            self.messages.put(json.loads(body.decode('utf-8')))

    def write_raw(self, data):
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    @staticmethod
    def frame(message):
        body = json.dumps(message, ensure_ascii=False).encode('utf-8')
        return b'Content-Length: %d\r\n\r\n' % len(body) + body

    def notify(self, method, params):
        self.write_raw(self.frame({'jsonrpc': '2.0', 'method': method, 'params': params}))

    def request(self, method, params):
        self.next_id += 1
        self.write_raw(self.frame({'jsonrpc': '2.0', 'id': self.next_id, 'method': method, 'params': params}))
        return self.wait(lambda m: m.get('id') == self.next_id and 'method' not in m)

    def wait(self, predicate, what='a message'):
        for m in self.unclaimed:
            if predicate(m):
                self.unclaimed.remove(m)
                return m
        while True:
            try:
                m = self.messages.get(timeout=TIMEOUT)
            except queue.Empty:
                raise AssertionError('timed out waiting for ' + what)
            if m is None:
                raise AssertionError('the server closed its output while waiting for ' + what)
            if predicate(m):
                return m
            self.unclaimed.append(m)

    unclaimed = []

    def diagnostics(self, uri, version=None):
        """The next publishDiagnostics for `uri` (whose version must be `version` when given)."""
        m = self.wait(lambda m: m.get('method') == 'textDocument/publishDiagnostics' and m['params']['uri'] == uri,
                      'diagnostics of ' + uri)
        if version is not None:
            check(m['params'].get('version'), version, 'the version of the published diagnostics')
        return m['params']['diagnostics']


failures = []


def check(got, want, what):
    if got != want:
        failures.append('%s:\n  got:  %r\n  want: %r' % (what, got, want))


def rng(l0, c0, l1, c1):
    return {'start': {'line': l0, 'character': c0}, 'end': {'line': l1, 'character': c1}}


def pos(uri, line, character):
    return {'textDocument': {'uri': uri}, 'position': {'line': line, 'character': character}}


def main():
    tilec = os.path.abspath(sys.argv[1])
    with tempfile.TemporaryDirectory() as tmp:
        helpers = os.path.join(tmp, 'helpers.py')
        kernel = os.path.join(tmp, 'my kernel.tile')  # a space: the URI has %20
        with open(helpers, 'w') as f:
            f.write(HELPERS)
        with open(kernel, 'w') as f:
            f.write(KERNEL)
        uri = 'file://' + kernel.replace(' ', '%20')
        c = Client(tilec, tmp)

        # Before initialize: requests are refused with ServerNotInitialized.
        r = c.request('textDocument/hover', pos(uri, 0, 0))
        check(r.get('error', {}).get('code'), -32002, 'a request before initialize')

        r = c.request('initialize', {'processId': None, 'rootUri': None, 'capabilities': {}})
        caps = r['result']['capabilities']
        check(caps['textDocumentSync']['change'], 1, 'full text sync')
        check((caps['hoverProvider'], caps['definitionProvider'], caps['completionProvider']['triggerCharacters']),
              (True, True, ['.']), 'the capabilities')
        c.notify('initialized', {})

        # Bad messages: not JSON, not a request, an unknown method, bad params; an unknown notification is ignored.
        c.write_raw(b'Content-Length: 9\r\n\r\n{"jsonrpc')
        m = c.wait(lambda m: 'error' in m, 'the parse error')
        check((m['id'], m['error']['code']), (None, -32700), 'a message that is not JSON')
        c.write_raw(c.frame([1, 2, 3]))
        m = c.wait(lambda m: 'error' in m, 'the invalid request error')
        check((m['id'], m['error']['code']), (None, -32600), 'a message that is not a request')
        c.notify('tilec/noSuchNotification', {})
        r = c.request('tilec/noSuchMethod', {})
        check(r.get('error', {}).get('code'), -32601, 'an unknown method')
        r = c.request('textDocument/hover', {'textDocument': {'uri': uri}})
        check(r.get('error', {}).get('code'), -32602, 'a hover without a position')

        # Open: no diagnostics.
        c.notify('textDocument/didOpen', {'textDocument': {'uri': uri, 'languageId': 'python', 'version': 1,
                                                           'text': KERNEL}})
        check(c.diagnostics(uri, 1), [], 'the diagnostics of the correct file')

        # Hover on a shared buffer (its pipeline stages and offset after lowering), a fragment (its layout),
        # a parameter; nothing on a keyword.
        r = c.request('textDocument/hover', pos(uri, 18, 24))  # A_shared in T.gemm(A_shared, ...)
        check(r['result'], {'contents': {'kind': 'markdown', 'value': HOVER_A_SHARED}}, 'hover on A_shared')
        r = c.request('textDocument/hover', pos(uri, 13, 15))  # C_local = T.alloc_fragment(...)
        check(r['result']['contents']['value'], HOVER_C_LOCAL, 'hover on C_local')
        r = c.request('textDocument/hover', pos(uri, 8, 16))  # the parameter A
        check(r['result']['contents']['value'], HOVER_A, 'hover on the parameter A')
        r = c.request('textDocument/hover', pos(uri, 4, 1))  # `def`
        check(r['result'], None, 'hover on a keyword')

        # Completion after `T.`: the front end's own table of tilelang.language.
        r = c.request('textDocument/completion', pos(uri, 14, 14))  # T.|clear
        labels = [i['label'] for i in r['result']['items']]
        for name in ('gemm', 'copy', 'clear', 'Kernel', 'Pipelined', 'alloc_shared', 'float16'):
            check(name in labels, True, name + ' among the completions')
        check('block_sizes' in labels, False, 'a name of the module among the T. completions')
        gemm = [i for i in r['result']['items'] if i['label'] == 'gemm']
        check(gemm[0]['kind'] if gemm else None, 3, 'the completion kind of T.gemm (a function)')
        r = c.request('textDocument/completion', pos(uri, 5, 10))  # not after `T.`
        check(r['result'], None, 'completion outside T.')

        # Go to definition: into the user's module, to a local binding, to the module from its import.
        helpers_uri = 'file://' + helpers
        r = c.request('textDocument/definition', pos(uri, 5, 35))  # block_sizes()
        check(r['result'], {'uri': helpers_uri, 'range': rng(2, 4, 2, 15)}, 'definition of block_sizes')
        r = c.request('textDocument/definition', pos(uri, 18, 44))  # C_local in T.gemm
        check(r['result'], {'uri': uri, 'range': rng(13, 12, 13, 19)}, 'definition of C_local')
        r = c.request('textDocument/definition', pos(uri, 16, 31))  # block_M in the copy
        check(r['result'], {'uri': uri, 'range': rng(5, 4, 5, 11)}, 'definition of block_M')
        r = c.request('textDocument/definition', pos(uri, 1, 8))  # `helpers` in the import
        check(r['result'], {'uri': helpers_uri, 'range': rng(0, 0, 0, 0)}, 'definition of the module helpers')
        r = c.request('textDocument/definition', pos(uri, 18, 19))  # T.gemm: not the user's
        check(r['result'], None, 'definition of T.gemm')

        # A shape error: its exact range and message; hover still answers from the last good analysis.
        c.notify('textDocument/didChange', {'textDocument': {'uri': uri, 'version': 2},
                                            'contentChanges': [{'text': SHAPE_ERROR}]})
        check(c.diagnostics(uri, 2), [{
            'range': rng(18, 16, 18, 51), 'severity': 1, 'source': 'tilec',
            'message': 'gemm shapes do not agree: B_shared is (64, 128) so N = 128, but C_local is (128, 129) so N = 129'}],
            'the shape error')
        r = c.request('textDocument/hover', pos(uri, 18, 24))
        check(r['result'], {'contents': {'kind': 'markdown', 'value': HOVER_A_SHARED}}, 'hover after the shape error')

        # Debouncing: two quick changes, only the newest analysed (the syntax error, not the lowering error).
        c.write_raw(c.frame({'jsonrpc': '2.0', 'method': 'textDocument/didChange',
                             'params': {'textDocument': {'uri': uri, 'version': 3},
                                        'contentChanges': [{'text': LOWERING_ERROR}]}}) +
                    c.frame({'jsonrpc': '2.0', 'method': 'textDocument/didChange',
                             'params': {'textDocument': {'uri': uri, 'version': 4},
                                        'contentChanges': [{'text': SYNTAX_ERROR}]}}))
        # `label = "héllo 😀" + )`: the `)` is byte 24 of the line, UTF-16 column 21.
        check(c.diagnostics(uri, 4), [{'range': rng(24, 21, 24, 22), 'severity': 1, 'source': 'tilec',
                                       'message': SYNTAX_MESSAGE}], 'the syntax error after non-ASCII text')
        r = c.request('textDocument/hover', pos(uri, 18, 24))
        check(r['result']['contents']['value'], HOVER_A_SHARED, 'hover while the file does not parse')

        # The lowering's checks: an error with its note as related information.
        c.notify('textDocument/didChange', {'textDocument': {'uri': uri, 'version': 5},
                                            'contentChanges': [{'text': LOWERING_ERROR}]})
        check(c.diagnostics(uri, 5), [{
            'range': rng(8, 12, 8, 34), 'severity': 1, 'source': 'tilec',
            'message': "fragment 'f' is indexed here by (63 - i, j), not by the variables of a T.Parallel over its whole "
                       "shape, so every thread would need all 4096 of its elements; at most 256 fit in registers",
            'relatedInformation': [{'location': {'uri': uri, 'range': rng(9, 8, 9, 20)},
                                    'message': "elsewhere 'f' is spread over the threads, as here"}]}],
            'the lowering error')

        # An error in the imported module: published for that file too; cleared once it is fixed and saved.
        with open(helpers, 'w') as f:
            f.write(HELPERS.replace('return 128, 128, 64', 'return 128, 128, 64 +'))
        c.notify('textDocument/didChange', {'textDocument': {'uri': uri, 'version': 6},
                                            'contentChanges': [{'text': KERNEL}]})
        check(c.diagnostics(helpers_uri), HELPERS_ERRORS, 'the diagnostics of the broken module')
        check(c.diagnostics(uri, 6), KERNEL_ERRORS, 'the diagnostics of the file importing it')
        with open(helpers, 'w') as f:
            f.write(HELPERS)
        c.notify('textDocument/didSave', {'textDocument': {'uri': uri}})
        check(c.diagnostics(helpers_uri), [], 'the diagnostics of the module once fixed')
        check(c.diagnostics(uri, 6), [], 'the diagnostics of the importing file once the module is fixed')

        # Close: the diagnostics are cleared. Then shutdown and exit: exit code 0.
        c.notify('textDocument/didClose', {'textDocument': {'uri': uri}})
        check(c.diagnostics(uri), [], 'the diagnostics after close')
        r = c.request('shutdown', None)
        check(('result' in r, r.get('result')), (True, None), 'shutdown')
        r = c.request('textDocument/hover', pos(uri, 0, 0))
        check(r.get('error', {}).get('code'), -32600, 'a request after shutdown')
        c.notify('exit', None)
        check(c.proc.wait(timeout=TIMEOUT), 0, 'the exit code after shutdown and exit')
        stray = [m for m in c.unclaimed if m.get('method') == 'textDocument/publishDiagnostics'
                 and m['params'].get('version') == 3]
        check(stray, [], 'diagnostics of the version a newer change replaced')

        # The target from initializationOptions: sm_80 lowers to cp.async pipelines (98304 bytes, as
        # `tilec -arch=sm_80 --resource-usage` reports), with B_shared placed after A_shared.
        c = Client(tilec, tmp)
        c.request('initialize', {'capabilities': {}, 'initializationOptions': {'arch': 'sm_80'}})
        c.notify('textDocument/didOpen', {'textDocument': {'uri': uri, 'version': 1, 'text': KERNEL}})
        check(c.diagnostics(uri, 1), [], 'the diagnostics on sm_80')
        r = c.request('textDocument/hover', pos(uri, 18, 34))  # B_shared
        check(r['result']['contents']['value'], HOVER_B_SHARED_SM80, 'hover on B_shared for sm_80')
        c.request('shutdown', None)
        c.notify('exit', None)
        check(c.proc.wait(timeout=TIMEOUT), 0, 'the exit code of the sm_80 server')

    if failures:
        print('FAIL: %d checks' % len(failures))
        for f in failures:
            print(f)
        return 1
    print('PASS')
    return 0


HOVER_A_SHARED = ('**A_shared**: `float16[128, 64]`, shared (kernel `gemm`)\n'
                  '- shared memory: 49152 bytes (3 pipeline stages of 16384) at offset 0 of the block\'s 108416 on sm_90a')
HOVER_C_LOCAL = ('**C_local**: `float32[128, 128]`, fragment (kernel `gemm`)\n'
                 '- layout: mma accumulator over 4x1 warps (wgmma rows), 128 slots per thread')
HOVER_B_SHARED_SM80 = ('**B_shared**: `float16[64, 128]`, shared (kernel `gemm`)\n'
                       '- shared memory: 49152 bytes (3 pipeline stages of 16384) at offset 49152 of the block\'s 98304 on sm_80')
HOVER_A = '**A**: `float16[1024, 1024]`, global (kernel `gemm`)'
# At the end of `    return 128, 128, 64 +` (an empty range: there is no character there).
HELPERS_ERRORS = [{'range': rng(3, 25, 3, 25), 'severity': 1, 'source': 'tilec', 'message': 'expected an expression'}]
KERNEL_ERRORS = [{'range': rng(5, 32, 5, 43), 'severity': 1, 'source': 'tilec', 'message': "undefined name 'block_sizes'"}]
SYNTAX_MESSAGE = "unmatched ')'"

if __name__ == '__main__':
    sys.exit(main())
