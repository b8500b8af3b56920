/*
 * fs/table.c - the mount side of tables: readlink of an index's row links
 * (PATH/@NAME/VALUE/KEY). The model decides what every @ name is; here it
 * is only handed to the kernel.
 */
#include <errno.h>
#include <stdlib.h>

#include "fs/fs_int.h"

void fs_op_readlink(fuse_req_t req, fuse_ino_t ino)
{
	struct fs_ctx *ctx = fs_req_ctx(req);
	struct fs_node *node = fs_node_from_ino(ctx, ino);
	struct model_error err = { 0 };
	char *path, *target = NULL;
	int ret = fs_node_path(ctx, node, NULL, &path);

	if (ret < 0) {
		fs_reply_err(req, ret);
		return;
	}
	fs_trace(ctx, "readlink %s", path);
	ret = model_readlink(ctx->model, path, &target, &err);
	if (ret < 0) {
		fs_log_model(ctx, ret, &err, path);
		fs_reply_err(req, ret);
	} else {
		fuse_reply_readlink(req, target);
	}
	free(target);
	free(path);
}
