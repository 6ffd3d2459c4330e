// tilec device runtime: Hopper (sm_90) synchronisation for warp-specialized kernels: mbarriers, named
// barriers, proxy fences, register reallocation (setmaxnreg) and electing one lane. Part of tilec; embedded
// into generated code, which must compile on its own (nvcc or NVRTC) for every target.
//
// mbarriers are 8-byte objects in shared memory. The usual ring of a TMA pipeline with S stages:
//   full[s]  (init count 1): the producer's elected thread arrives with expect_tx(bytes of every tile of the
//            stage); the TMA loads complete the transaction bytes; consumers wait with parity (k / S) & 1.
//   empty[s] (init count = the consumer arrivals per stage): consumers arrive once they no longer read the
//            stage; the producer waits with parity ((k / S) & 1) ^ 1, which a fresh barrier satisfies at
//            once (the phase before the first counts as complete), so the first pass does not block.
// After initialising, the initialising thread calls mbarrier_init_fence() and the block synchronises once
// (__syncthreads) before any thread uses a barrier.
//
// Every instruction is inline PTX. CCCL's <cuda/ptx> covers the mbarrier, fence and cluster-barrier ones and
// compiles under nvcc and NVRTC (with CUDA's include/cccl on NVRTC's include path), but its tag objects
// (cuda::ptx::sem_release, space_shared, ...) are __device__ globals with internal linkage: NVRTC emits all
// of them into every PTX file under names that hash the translation unit's file name, so tilec's PTX for the
// same program differed with the output's name (tests/lit/aot/determinism.test, ptx_cubin.test). Including the
// whole <cuda/ptx> also cost about a second of every nvcc compile of a generated file. It has no bar.sync with
// a thread count, setmaxnreg, elect.sync or mapa at all.
//
// Clusters (TMA multicast, sm90_tma.cuh): a stage that one CTA's producer multicasts into every CTA of the
// cluster may be overwritten only when the consumers of every CTA released it, so consumers arrive on the
// empty barrier of each CTA of the cluster (mbarrier_arrive_cluster; init count = consumer arrivals per CTA
// times the CTAs), and the producer of each CTA still expects every byte of the stage on its own full barrier
// (the peers' multicast loads complete there too). cluster_sync() after the barriers' initialisation (instead
// of __syncthreads) and again, by every thread, before the block exits: a peer may still arrive on this
// CTA's barriers until then.
//
// Targets: mbarriers, named barriers and elect.sync need sm_90; setmaxnreg needs sm_90a. Elsewhere (the same
// generated text is compiled for sm_80..sm_89) these functions compile to nothing (elect_one to lane 0):
// generated code calls them only on the Hopper path.
#ifndef TILEC_STDLIB_SM90_BARRIER_CUH
#define TILEC_STDLIB_SM90_BARRIER_CUH

#include <stdint.h>

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define TILEC_SM90 1
#else
#define TILEC_SM90 0
#endif
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define TILEC_SM90A 1
#else
#define TILEC_SM90A 0
#endif

namespace tilec {

/// The shared-state-space address of a shared-memory object (what the PTX below takes).
__device__ __forceinline__ unsigned smem_addr(const void *p) {
#if defined(__CUDA_ARCH__)
    return (unsigned)__cvta_generic_to_shared(p);
#else
    (void)p;
    return 0;
#endif
}

/// Initialises the mbarrier `bar` (shared memory, 8-byte aligned) to expect `arrivals` arrivals per phase.
__device__ __forceinline__ void mbarrier_init(uint64_t *bar, unsigned arrivals) {
#if TILEC_SM90
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(arrivals) : "memory");
#else
    (void)bar;
    (void)arrivals;
#endif
}

/// Makes the calling thread's mbarrier initialisations visible to the other threads and to the async proxy
/// (TMA's complete_tx); a block barrier must follow before anyone uses them.
__device__ __forceinline__ void mbarrier_init_fence() {
#if TILEC_SM90
    asm volatile("fence.mbarrier_init.release.cluster;\nfence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}

/// One arrival on `bar` (release semantics at CTA scope: the caller's earlier memory accesses, shared-memory
/// reads of a stage included, happen before the phase completes).
__device__ __forceinline__ void mbarrier_arrive(uint64_t *bar) {
#if TILEC_SM90
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_addr(bar)) : "memory");
#else
    (void)bar;
#endif
}

/// One arrival on `bar` that also adds `bytes` to the transaction count the phase waits for (the bytes the
/// TMA loads of this phase will deliver).
__device__ __forceinline__ void mbarrier_arrive_expect_tx(uint64_t *bar, unsigned bytes) {
#if TILEC_SM90
    asm volatile("mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_addr(bar)),
                 "r"(bytes)
                 : "memory");
#else
    (void)bar;
    (void)bytes;
#endif
}

/// Adds `bytes` to the transaction count of `bar`'s current phase without arriving (T.tma_copy: the thread that
/// issues a TMA load announces its bytes; the role's threads arrive separately, T.barrier_arrive).
__device__ __forceinline__ void mbarrier_expect_tx(uint64_t *bar, unsigned bytes) {
#if TILEC_SM90
    asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(bytes) : "memory");
#else
    (void)bar;
    (void)bytes;
#endif
}

/// Waits until the phase of parity `parity` (0 or 1) of `bar` has completed: try_wait.parity in a loop, no
/// timeout (the hardware suspends the thread between tries). Acquire semantics at CTA scope.
__device__ __forceinline__ void mbarrier_wait(uint64_t *bar, unsigned parity) {
#if TILEC_SM90
    const unsigned addr = smem_addr(bar);
    unsigned done = 0;
    do {
        asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done)
                     : "r"(addr), "r"(parity)
                     : "memory");
    } while (!done);
#else
    (void)bar;
    (void)parity;
#endif
}

/// The calling CTA's rank in its cluster (0 without clusters).
__device__ __forceinline__ unsigned cluster_ctarank() {
#if TILEC_SM90
    unsigned rank;
    asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(rank));
    return rank;
#else
    return 0;
#endif
}

/// barrier.cluster arrive (release) and wait (acquire): every non-exited thread of every CTA of the cluster
/// takes part. Without a cluster launch the cluster is the CTA alone.
__device__ __forceinline__ void cluster_sync() {
#if TILEC_SM90
    asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;\n" ::: "memory");
#elif defined(__CUDA_ARCH__)
    __syncthreads();
#endif
}

/// One arrival on the mbarrier at `bar`'s offset in the shared memory of CTA `cta` of the cluster (this CTA's
/// own when cta is its rank). The arrive has PTX's default semantics (release at CTA scope), as CUTLASS's
/// cluster barriers do: the consumers' reads it orders are wgmma's, already retired by wgmma_wait. With
/// .release.cluster ptxas put MEMBAR.ALL.GPU before every arrive, and the clustered GEMM ran at 0.6x the
/// speed of the unclustered one (H200, 2026-12-01).
__device__ __forceinline__ void mbarrier_arrive_cluster(uint64_t *bar, unsigned cta) {
#if TILEC_SM90
    const unsigned local = smem_addr(bar);
    unsigned remote;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(local), "r"(cta));
    asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];\n" ::"r"(remote) : "memory");
#else
    (void)bar;
    (void)cta;
#endif
}

/// One arrival on the mbarrier at `bar`'s offset in each of the cluster's CTAs 0..ctas-1 (a stage that all of
/// them multicast into is released to every one of their producers).
__device__ __forceinline__ void mbarrier_arrive_ctas(uint64_t *bar, int ctas) {
    for (int r = 0; r < ctas; ++r) mbarrier_arrive_cluster(bar, (unsigned)r);
}

/// bar.arrive on hardware barrier `id` for `threads` threads: counts the calling warps' arrival without waiting
/// (the barrier completes when `threads` threads have arrived or synced on it; named_barrier_sync waits for
/// that). With it one group of warps hands a turn to another (ping-pong consumer warpgroups).
__device__ __forceinline__ void named_barrier_arrive(unsigned id, unsigned threads) {
#if defined(__CUDA_ARCH__)
    asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
#else
    (void)id;
    (void)threads;
#endif
}

/// bar.sync on hardware barrier `id` (1..15; 0 is __syncthreads') for `threads` threads (a multiple of 32):
/// synchronises a subset of the block, e.g. the consumer warpgroups without the producer.
__device__ __forceinline__ void named_barrier_sync(unsigned id, unsigned threads) {
#if defined(__CUDA_ARCH__)
    asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
#else
    (void)id;
    (void)threads;
#endif
}

/// Raises the calling warpgroup's register limit to Regs (24..256, a multiple of 8); all four warps of the
/// warpgroup must call it. Takes effect only when the kernel has a register cap at entry
/// (__launch_bounds__(threads, 1)); otherwise ptxas ignores it with warning C7508.
template <int Regs> __device__ __forceinline__ void setmaxnreg_inc() {
    static_assert(Regs >= 24 && Regs <= 256 && Regs % 8 == 0, "setmaxnreg takes 24..256 in steps of 8");
#if TILEC_SM90A
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(Regs));
#endif
}

/// Lowers the calling warpgroup's register limit to Regs (see setmaxnreg_inc), freeing registers for the
/// warpgroups that raise theirs.
template <int Regs> __device__ __forceinline__ void setmaxnreg_dec() {
    static_assert(Regs >= 24 && Regs <= 256 && Regs % 8 == 0, "setmaxnreg takes 24..256 in steps of 8");
#if TILEC_SM90A
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(Regs));
#endif
}

/// Orders the calling thread's earlier generic-proxy shared-memory writes (ordinary stores, stmatrix) before
/// later async-proxy accesses (TMA stores, wgmma reads) of the same memory; a barrier between the writers and
/// the thread that issues the async operation must follow.
__device__ __forceinline__ void fence_proxy_async_shared() {
#if TILEC_SM90
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}

/// True in exactly one lane of the calling (converged, full) warp: elect.sync on sm_90, lane 0 elsewhere.
__device__ __forceinline__ bool elect_one() {
#if TILEC_SM90
    unsigned elected = 0;
    asm volatile("{\n.reg .pred p;\nelect.sync _|p, 0xffffffff;\nselp.u32 %0, 1, 0, p;\n}\n" : "=r"(elected));
    return elected != 0;
#elif defined(__CUDA_ARCH__)
    return (threadIdx.x & 31) == 0;
#else
    return false;
#endif
}

} // namespace tilec

#undef TILEC_SM90
#undef TILEC_SM90A

#endif // TILEC_STDLIB_SM90_BARRIER_CUH
