/*
 * model/tree/record.c - the checksum that seals every data record (docs/FORMAT.md,
 * "data: leaf records", format 2): CRC-32C, and the one encode/decode pair
 * that adds and verifies it around the leaf codec of leaf.c, plus the
 * re-sealing a record needs when its key changes or a format-1 store is
 * upgraded.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "model/model_int.h"
#include "store/store.h"

/*
 * CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), one table lookup
 * per byte. Entry i is the CRC register after shifting byte i through
 * eight rounds of "shift right, xor the polynomial when bit 0 was set".
 */
static const uint32_t crc32c_table[256] = {
	0x00000000, 0xf26b8303, 0xe13b70f7, 0x1350f3f4, 0xc79a971f, 0x35f1141c,
	0x26a1e7e8, 0xd4ca64eb, 0x8ad958cf, 0x78b2dbcc, 0x6be22838, 0x9989ab3b,
	0x4d43cfd0, 0xbf284cd3, 0xac78bf27, 0x5e133c24, 0x105ec76f, 0xe235446c,
	0xf165b798, 0x030e349b, 0xd7c45070, 0x25afd373, 0x36ff2087, 0xc494a384,
	0x9a879fa0, 0x68ec1ca3, 0x7bbcef57, 0x89d76c54, 0x5d1d08bf, 0xaf768bbc,
	0xbc267848, 0x4e4dfb4b, 0x20bd8ede, 0xd2d60ddd, 0xc186fe29, 0x33ed7d2a,
	0xe72719c1, 0x154c9ac2, 0x061c6936, 0xf477ea35, 0xaa64d611, 0x580f5512,
	0x4b5fa6e6, 0xb93425e5, 0x6dfe410e, 0x9f95c20d, 0x8cc531f9, 0x7eaeb2fa,
	0x30e349b1, 0xc288cab2, 0xd1d83946, 0x23b3ba45, 0xf779deae, 0x05125dad,
	0x1642ae59, 0xe4292d5a, 0xba3a117e, 0x4851927d, 0x5b016189, 0xa96ae28a,
	0x7da08661, 0x8fcb0562, 0x9c9bf696, 0x6ef07595, 0x417b1dbc, 0xb3109ebf,
	0xa0406d4b, 0x522bee48, 0x86e18aa3, 0x748a09a0, 0x67dafa54, 0x95b17957,
	0xcba24573, 0x39c9c670, 0x2a993584, 0xd8f2b687, 0x0c38d26c, 0xfe53516f,
	0xed03a29b, 0x1f682198, 0x5125dad3, 0xa34e59d0, 0xb01eaa24, 0x42752927,
	0x96bf4dcc, 0x64d4cecf, 0x77843d3b, 0x85efbe38, 0xdbfc821c, 0x2997011f,
	0x3ac7f2eb, 0xc8ac71e8, 0x1c661503, 0xee0d9600, 0xfd5d65f4, 0x0f36e6f7,
	0x61c69362, 0x93ad1061, 0x80fde395, 0x72966096, 0xa65c047d, 0x5437877e,
	0x4767748a, 0xb50cf789, 0xeb1fcbad, 0x197448ae, 0x0a24bb5a, 0xf84f3859,
	0x2c855cb2, 0xdeeedfb1, 0xcdbe2c45, 0x3fd5af46, 0x7198540d, 0x83f3d70e,
	0x90a324fa, 0x62c8a7f9, 0xb602c312, 0x44694011, 0x5739b3e5, 0xa55230e6,
	0xfb410cc2, 0x092a8fc1, 0x1a7a7c35, 0xe811ff36, 0x3cdb9bdd, 0xceb018de,
	0xdde0eb2a, 0x2f8b6829, 0x82f63b78, 0x709db87b, 0x63cd4b8f, 0x91a6c88c,
	0x456cac67, 0xb7072f64, 0xa457dc90, 0x563c5f93, 0x082f63b7, 0xfa44e0b4,
	0xe9141340, 0x1b7f9043, 0xcfb5f4a8, 0x3dde77ab, 0x2e8e845f, 0xdce5075c,
	0x92a8fc17, 0x60c37f14, 0x73938ce0, 0x81f80fe3, 0x55326b08, 0xa759e80b,
	0xb4091bff, 0x466298fc, 0x1871a4d8, 0xea1a27db, 0xf94ad42f, 0x0b21572c,
	0xdfeb33c7, 0x2d80b0c4, 0x3ed04330, 0xccbbc033, 0xa24bb5a6, 0x502036a5,
	0x4370c551, 0xb11b4652, 0x65d122b9, 0x97baa1ba, 0x84ea524e, 0x7681d14d,
	0x2892ed69, 0xdaf96e6a, 0xc9a99d9e, 0x3bc21e9d, 0xef087a76, 0x1d63f975,
	0x0e330a81, 0xfc588982, 0xb21572c9, 0x407ef1ca, 0x532e023e, 0xa145813d,
	0x758fe5d6, 0x87e466d5, 0x94b49521, 0x66df1622, 0x38cc2a06, 0xcaa7a905,
	0xd9f75af1, 0x2b9cd9f2, 0xff56bd19, 0x0d3d3e1a, 0x1e6dcdee, 0xec064eed,
	0xc38d26c4, 0x31e6a5c7, 0x22b65633, 0xd0ddd530, 0x0417b1db, 0xf67c32d8,
	0xe52cc12c, 0x1747422f, 0x49547e0b, 0xbb3ffd08, 0xa86f0efc, 0x5a048dff,
	0x8ecee914, 0x7ca56a17, 0x6ff599e3, 0x9d9e1ae0, 0xd3d3e1ab, 0x21b862a8,
	0x32e8915c, 0xc083125f, 0x144976b4, 0xe622f5b7, 0xf5720643, 0x07198540,
	0x590ab964, 0xab613a67, 0xb831c993, 0x4a5a4a90, 0x9e902e7b, 0x6cfbad78,
	0x7fab5e8c, 0x8dc0dd8f, 0xe330a81a, 0x115b2b19, 0x020bd8ed, 0xf0605bee,
	0x24aa3f05, 0xd6c1bc06, 0xc5914ff2, 0x37faccf1, 0x69e9f0d5, 0x9b8273d6,
	0x88d28022, 0x7ab90321, 0xae7367ca, 0x5c18e4c9, 0x4f48173d, 0xbd23943e,
	0xf36e6f75, 0x0105ec76, 0x12551f82, 0xe03e9c81, 0x34f4f86a, 0xc69f7b69,
	0xd5cf889d, 0x27a40b9e, 0x79b737ba, 0x8bdcb4b9, 0x988c474d, 0x6ae7c44e,
	0xbe2da0a5, 0x4c4623a6, 0x5f16d052, 0xad7d5351,
};

static uint32_t crc32c_bytes(uint32_t crc, const uint8_t *p, size_t len)
{
	while (len--)
		crc = crc32c_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return crc;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
/*
 * The same register, eight bytes per instruction where the CPU has SSE4.2
 * (its crc32 instruction computes exactly this polynomial): about twenty
 * times the table's speed, which a big leaf's every read pays for.
 */
__attribute__((target("sse4.2")))
static uint32_t crc32c_wide(uint32_t crc, const uint8_t *p, size_t len)
{
	uint64_t reg = crc, word;

	for (; len >= 8; len -= 8, p += 8) {
		memcpy(&word, p, 8);
		reg = __builtin_ia32_crc32di(reg, word);
	}
	return crc32c_bytes((uint32_t)reg, p, len);
}
#define CRC32C_WIDE_USABLE() __builtin_cpu_supports("sse4.2")
#else
#define crc32c_wide crc32c_bytes
#define CRC32C_WIDE_USABLE() 0
#endif

uint32_t crc32c(uint32_t crc, const void *data, size_t len)
{
	if (len >= 64 && CRC32C_WIDE_USABLE())
		return ~crc32c_wide(~crc, data, len);
	return ~crc32c_bytes(~crc, data, len);
}

/* The key is covered too, so a record that a flipped key bit moved to
 * another path no longer verifies. */
static uint32_t record_sum(const void *key, size_t key_len, const void *body, size_t body_len)
{
	return crc32c(crc32c(0, key, key_len), body, body_len);
}

static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static uint32_t get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

void leaf_record_seal(const void *key, size_t key_len, const void *body, size_t body_len,
		      struct strbuf *sb)
{
	uint8_t sum[LEAF_CHECKSUM_SIZE];

	put_be32(sum, record_sum(key, key_len, body, body_len));
	strbuf_add(sb, body, body_len);
	strbuf_add(sb, sum, sizeof(sum));
}

/*
 * Verifying a record costs its whole length, and a big leaf is read by the
 * mount in many calls of 128 KiB or so, each in a transaction of its own:
 * verified every time, reading a leaf of N bytes would cost N squared.
 * So each thread remembers the last big record it verified -- where its
 * bytes lie (LMDB hands out pointers into its map, the same for every
 * snapshot until the record changes), its length, its stored sum and the
 * sum of its key -- and trusts a record that matches all four. A record
 * written anew has other bytes and so, but for a CRC collision, another
 * sum; a mismatch is verified in full. This is a cache of a pure result,
 * private to each thread, so it is kept here rather than in a context.
 */
#define RECORD_MEMO_MIN ((size_t)1 << 20)

struct record_memo {
	const void *record;
	size_t len;
	uint32_t stored, key_sum;
};

static _Thread_local struct record_memo record_memo;

static bool record_memo_has(const void *record, size_t len, uint32_t stored, uint32_t key_sum)
{
	return record_memo.record == record && record_memo.len == len &&
	       record_memo.stored == stored && record_memo.key_sum == key_sum;
}

int leaf_record_verify(unsigned format, const void *key, size_t key_len, const void *record,
		       size_t len, size_t *body_len)
{
	uint32_t stored, key_sum;

	if (format == 1) {
		*body_len = len;
		return 0;
	}
	if (format < 2 || format > STORE_FORMAT_VERSION)
		return -EIO;	/* formats 2, 3 and 4 seal data records alike */
	if (len < LEAF_CHECKSUM_SIZE)
		return -EBADMSG;
	*body_len = len - LEAF_CHECKSUM_SIZE;
	stored = get_be32((const uint8_t *)record + *body_len);
	if (len < RECORD_MEMO_MIN)
		return stored == record_sum(key, key_len, record, *body_len) ? 0 : -EBADMSG;
	key_sum = crc32c(0, key, key_len);
	if (record_memo_has(record, len, stored, key_sum))
		return 0;
	if (stored != crc32c(key_sum, record, *body_len))
		return -EBADMSG;
	record_memo = (struct record_memo){ record, len, stored, key_sum };
	return 0;
}

void leaf_record_encode(const void *key, size_t key_len, const struct leaf *leaf,
			struct strbuf *sb)
{
	struct strbuf body;

	strbuf_init(&body);
	leaf_encode(leaf, &body);
	if (body.failed)
		sb->failed = true;
	else
		leaf_record_seal(key, key_len, body.buf, body.len, sb);
	strbuf_release(&body);
}

int leaf_record_decode(unsigned format, const void *key, size_t key_len, const void *record,
		       size_t len, struct leaf *out)
{
	size_t body_len;
	int ret = leaf_record_verify(format, key, key_len, record, len, &body_len);

	if (ret < 0)
		return ret;
	return leaf_decode(record, body_len, out);
}

bool leaf_record_is_marker(const void *record, size_t len)
{
	struct leaf leaf;

	/* the body before its checksum: without the key it is not verified (kvfs check does) */
	return len >= LEAF_CHECKSUM_SIZE && leaf_decode(record, len - LEAF_CHECKSUM_SIZE, &leaf) == 0 &&
	       leaf_is_marker(&leaf);
}

int leaf_record_rekey(unsigned format, const void *old_key, size_t old_len, const void *new_key,
		      size_t new_len, const void *record, size_t len, struct strbuf *sb)
{
	size_t body_len;
	int ret = leaf_record_verify(format, old_key, old_len, record, len, &body_len);

	if (ret < 0)
		return ret;
	leaf_record_seal(new_key, new_len, record, body_len, sb);
	return sb->failed ? -ENOMEM : 0;
}
