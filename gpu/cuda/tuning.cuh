/* CUDA backend tuning constants, each with the constraint it must satisfy.
 * Change them here only; the kernels static_assert what they rely on. */
#ifndef TRK_GPU_CUDA_TUNING_CUH
#define TRK_GPU_CUDA_TUNING_CUH

/* ---- fused kernel (the default variant) ------------------------------- */

/* Threads per block. Multiple of 32, <= 1024. One block holds one copy of the
 * lookup tables in shared memory, so fewer, larger blocks mean less table
 * traffic from L2 at the start of every launch. Overridable at build time
 * with TRK_FUSED_MIN_BLOCKS (-DTRK_FUSED_THREADS=1024 -DTRK_FUSED_MIN_BLOCKS=1:
 * one block an SM, half the table copies, the same 64-register cap) to
 * compare on the device (tests/gpu/kernel_knobs.sh). */
#ifndef TRK_FUSED_THREADS
#define TRK_FUSED_THREADS 512
#endif
/* Minimum resident blocks per SM requested from the compiler (register cap
 * = 65536 / (TRK_FUSED_THREADS * this)). 2 x 512 threads -> <= 64 registers;
 * 3 x 512 -> <= 40 (ptxas spills: gpu/cuda/NOTES.md, "Kernel knobs"). >= 1. */
#ifndef TRK_FUSED_MIN_BLOCKS
#define TRK_FUSED_MIN_BLOCKS 2
#endif
/* Where the fused kernel reads the table image. 0: every block copies the
 * whole image into its shared memory first (23 KB at M = 128 RGB, read from
 * L2 by every block: as many bytes as a 1080p RGB frame). 1: only the
 * summary tables (3 KB for RGB; every pixel reads them) are copied; the
 * full tables and the zero entry (read only where a summary passes) are
 * read from the device image through L1 (__ldg). 2: nothing is copied,
 * summaries through L1 too. Same results (the same words are read); an
 * experiment's switch, 0..2. */
#ifndef TRK_FUSED_TABLES
#define TRK_FUSED_TABLES 0
#endif
/* 1 and 2: a block's prologue keeps its loads in flight together: the table
 * copy issues up to four 16-byte loads per thread before storing any, and
 * each warp asks for its first unit's pixels before the table barrier (the
 * frame read overlaps the copy): 1 prefetches their lines into L1 (no
 * register held), 2 loads them into registers (three more live across the
 * unit loop: ptxas spills a few bytes at 4 and 8 words). 3: as 2, and every
 * later unit's pixels are loaded one unit ahead (while the warp works on
 * the unit before: two loads in flight a warp instead of one). 0: load,
 * store, barrier, then the first pixels. 0..3. */
#ifndef TRK_FUSED_PRELOAD
#define TRK_FUSED_PRELOAD 0
#endif
/* How a block's sums reach the frame's accumulators. 0: a block barrier,
 * then the block's threads flush together. 1: no final barrier: each warp
 * takes a ticket (a shared counter) when its units are done, and the last
 * warp flushes the block's sums (and hands the results over when it is the
 * grid's last) while the others have exited. 0 or 1. */
#ifndef TRK_FUSED_FLUSH
#define TRK_FUSED_FLUSH 0
#endif
/* The block-local sums of the fused kernel. 0: 64-bit sums (trk_cu_sacc; five
 * of an event's adds are 64-bit shared atomics, compare-and-swap loops on
 * sm_90). 1: 32-bit sums relative to the block (gpu/cuda/fused_acc.cuh:
 * eight native 32-bit adds an event, widened at the flush; 48 bytes an
 * object instead of 60), exact as long as a block's pixels times its largest
 * term stay below 2^32: the launch takes more blocks than are resident when
 * a frame needs it (trk_facc::acc32_fits; 1080p and 4K do not). 0 or 1.
 * 1 since the H100 side by side (gpu/cuda/NOTES.md "Kernel knobs"): 1.5-2
 * us faster at 1080p and 4K M=128, the same results. */
#ifndef TRK_FUSED_ACC32
#define TRK_FUSED_ACC32 1
#endif
/* Pixels each lane handles per unit. Must be 4: every input format then
 * loads with one naturally aligned 4/8/12/16-byte access per lane (the
 * device frame pitch is a multiple of TRK_CUDA_PITCH_ALIGN). */
#define TRK_FUSED_PX_PER_LANE 4
/* Pixels one warp covers per unit: a row segment. */
#define TRK_FUSED_SEG (32 * TRK_FUSED_PX_PER_LANE)
/* Fewest units (row segments) a block is given; smaller launches (bands,
 * small frames) get fewer blocks instead of idle ones. >= 1. */
#define TRK_FUSED_MIN_UNITS_PER_BLOCK 16

/* Objects present in a warp's segment, per 32-object mask word, from which
 * the fused kernel takes the dense path (a warp transpose of the masks, each
 * lane one object: a constant cost per word) instead of reducing the
 * present objects one by one (a cost per object). Break-even estimate in
 * gpu/cuda/NOTES.md ("Dense scenes"). 1..32; 33 turns the dense path off.
 * Overridable at build time to compare on the device. */
#ifndef TRK_FUSED_DENSE_MIN
#define TRK_FUSED_DENSE_MIN 3
#endif

/* ---- point gathers (gather.cu) ---------------------------------------- */

/* Threads per block of the gather kernel, one point each. Multiple of 32,
 * <= 1024; a plan of ~1-2 thousand points is then one wave of a few
 * blocks. */
#define TRK_CU_GATHER_THREADS 128

/* ---- waiting for results ---------------------------------------------- */

/* Microseconds cu_wait polls a frame's completion event before it blocks.
 * A context in blocking-sync mode (--hwdec shares the primary context so
 * set up for FFmpeg) otherwise sleeps on every frame and pays a thread
 * wake-up (tens of us to ms under load) on top of the GPU's own time; a
 * frame's whole GPU time is ~0.07 ms from an NVDEC surface and ~0.3 ms from
 * a pinned 1080p host frame (H100), so most frames end within the spin.
 * Bounds the CPU a wait can burn: >= 0 (0 = block at once). */
#define TRK_CU_WAIT_SPIN_US 500

/* ---- straightforward lookup-table and naive kernels ------------------- */

/* 2-D block: TRK_LUT_BX x TRK_LUT_BY pixels, one thread per pixel.
 * BX * BY <= 1024 and a multiple of 32. */
#define TRK_LUT_BX 32
#define TRK_LUT_BY 8

/* ---- seed-faithful MOCT ----------------------------------------------- */

/* Threads per block of the base and reduction kernels (2-D: 32 x 8). */
#define TRK_MOCT_BX 32
#define TRK_MOCT_BY 8
/* Largest frame side the MOCT base supports: base entries keep coordinates
 * in 16 bits. */
#define TRK_MOCT_MAX_SIDE 65535
/* Reduction factors accepted: 2 .. this. */
#define TRK_MOCT_MAX_R 1024

/* ---- pre-filter (prefilter.cu) ----------------------------------------- */

/* Horizontal pass: one thread per output sample, a tile of TRK_PF_H_BX
 * samples x TRK_PF_H_BY rows per block. BX a multiple of 32, BX * BY <= 1024;
 * BX >= TRK_PREFILTER_TAPS (the weights are loaded by the first threads). */
#define TRK_PF_H_BX 128
#define TRK_PF_H_BY 4
/* Vertical pass: TRK_PF_V_BX (= 32, one warp per shared row) columns x
 * TRK_PF_V_ROWS rows per block, TRK_PF_V_BY threads per column (each does
 * ROWS / BY outputs, so the 2r apron rows are loaded once for many). ROWS a
 * multiple of BY; shared (ROWS + 24) x 32 x 2 bytes. */
#define TRK_PF_V_BX   32
#define TRK_PF_V_BY   8
#define TRK_PF_V_ROWS 32

/* ---- frames, uploads ---------------------------------------------------- */

/* Row pitch of device frame planes: a multiple of 16 (16-byte loads) and of
 * 128 so each row starts on a cache line. */
#define TRK_CUDA_PITCH_ALIGN 128
/* The upload of a frame is split into at most this many row bands; band i's
 * kernel overlaps band i+1's copy (and the host staging copy of band i+2). */
#define TRK_CUDA_MAX_BANDS 8
/* Bytes per band below which a frame is not split further (a launch per band
 * costs a few microseconds of table loading and launch latency). */
#define TRK_CUDA_BAND_BYTES (2u << 20)

/* ---- blob lists (blobs.cu) ---------------------------------------------- */

/* Threads per block of the threshold + runs kernel and of the grid-stride
 * run kernels (union, flatten). Multiple of 32, <= 1024; in the threshold
 * kernel each warp takes one 32-pixel mask word of the row at a time. */
#define TRK_BLOB_THREADS 256
/* Resident blocks per SM asked of the threshold kernel (persistent: a
 * block copies the group's tables into shared memory once and then takes
 * rows in turn; also its register cap, 65536 / (TRK_BLOB_THREADS x this) =
 * 64, so that many fit) and of the grid-stride run kernels (union,
 * flatten, stats). >= 1. */
#ifndef TRK_BLOB_ROW_BLOCKS
#define TRK_BLOB_ROW_BLOCKS 4
#endif
/* Threads per block of the threshold + runs kernel alone (a row per block
 * at a time; warps share the row's words). Overridable at build time
 * (-DTRK_BLOB_ROW_THREADS=128 -DTRK_BLOB_ROW_BLOCKS=8: twice the rows in
 * flight per SM at the same 64-register cap) to compare on the device. */
#ifndef TRK_BLOB_ROW_THREADS
#define TRK_BLOB_ROW_THREADS TRK_BLOB_THREADS
#endif
#define TRK_BLOB_RUN_BLOCKS 4
/* The runs kernel that starts from the fused kernel's masks
 * (mask_runs_kernel, the fused variant): threads per block (multiple of 32,
 * <= 1024; a warp gathers one object's row words at a time) and resident
 * blocks per SM asked (grid = this x SMs, at most one block per row; the
 * register cap is 65536 / (threads x this) = 64). 128 x 8: about 1000 rows
 * in flight at once, all of a 1080p frame. */
#ifndef TRK_BLOB_MASK_THREADS
#define TRK_BLOB_MASK_THREADS 128
#endif
#ifndef TRK_BLOB_MASK_BLOCKS
#define TRK_BLOB_MASK_BLOCKS 8
#endif
/* Mask words a warp of the threshold kernel reads the pixels of before it
 * looks any of them up: the loads of a row are in flight together instead
 * of one 32-pixel word's round trip after another. >= 1 (each costs three
 * registers). */
#define TRK_BLOB_ROW_UNROLL 4
/* Mask words of one row the threshold kernel keeps in shared memory (the
 * present objects' words; more present objects than fit are done in
 * chunks). >= the words of the widest row, ceil(TRK_BLOB_MAX_SIDE / 32). */
#define TRK_BLOB_ROW_MASK_WORDS 3072
/* Threads of the per-object top-K selection block. Multiple of 32, >= 256
 * (warp 0 scans the 256-bin radix histogram, 8 bins per lane), <= 1024. */
#define TRK_BLOB_SEL_THREADS 512
/* Root keys the selection block holds in shared memory (8 + 4 bytes each):
 * objects with at most this many components are ranked there without
 * touching their runs. >= 1. */
#define TRK_BLOB_SEL_KEYS 2048
/* Device scratch the labelling may hold (bytes). Objects with blobs are
 * labelled in groups of as many as fit (at least one); each needs 20 bytes
 * per possible run (ceil(max_w / 2) * max_h runs: a checkerboard) plus 4
 * bytes per mask word and 8 per row: 21 MB at 1080p, 83 MB at 4K. More
 * objects than fit run the same kernels again, group after group (each
 * group reads the frame once). */
#define TRK_BLOB_SCRATCH_BYTES ((size_t)1 << 30)
/* Largest frame side with blobs: run spans keep x in 16 bits and run
 * indices (ceil(W / 2) * H) must stay below 2^31 (the top bit tags the
 * selected roots). */
#define TRK_BLOB_MAX_SIDE 65535

#endif
