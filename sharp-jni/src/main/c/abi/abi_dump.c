/*
 * abi_dump: prints the libsharp_coll ABI as this compiler sees it through the header, one
 * fact per line, for a Java test to compare with its JNA structures:
 *
 *   struct <name> size <bytes>
 *   field <struct>.<field>[.<subfield>] offset <bytes from the start of <struct>>
 *   enum <enum type> size <bytes>
 *   const <enum type>.<NAME> value <n>
 *
 * Nested anonymous structures and the data descriptor's union are listed with their
 * members (e.g. field sharp_coll_caps.support_mask.dtypes offset 24); members that are
 * named structure types (e.g. sharp_coll_reduce_spec.sbuf_desc) only by their own offset,
 * their layout being listed under their own struct lines.
 *
 * It needs only the header, so it also builds against NVIDIA's header on a cluster
 * (cc -I$HPCX_SHARP_DIR/include abi_dump.c) to check the tables there.  Constant names
 * the reference does not give are printed only with sharp4j's own header.
 */
#include <sharp/api/sharp_coll.h>

#include <stddef.h>
#include <stdio.h>

#define STRUCT(T)   printf("struct %s size %zu\n", #T, sizeof(struct T))
#define FIELD(T, f) printf("field %s.%s offset %zu\n", #T, #f, offsetof(struct T, f))
#define ENUM(E)     printf("enum %s size %zu\n", #E, sizeof(enum E))
#define CONST(E, N) printf("const %s.%s value %lld\n", #E, #N, (long long)(N))

int main(void)
{
    STRUCT(sharp_coll_config);
    FIELD(sharp_coll_config, ib_dev_list);
    FIELD(sharp_coll_config, user_progress_num_polls);
    FIELD(sharp_coll_config, coll_timeout);
    FIELD(sharp_coll_config, flags);
    FIELD(sharp_coll_config, reserved);

    STRUCT(sharp_coll_out_of_band_colls);
    FIELD(sharp_coll_out_of_band_colls, bcast);
    FIELD(sharp_coll_out_of_band_colls, barrier);
    FIELD(sharp_coll_out_of_band_colls, gather);

    STRUCT(sharp_coll_init_spec);
    FIELD(sharp_coll_init_spec, job_id);
    FIELD(sharp_coll_init_spec, world_rank);
    FIELD(sharp_coll_init_spec, world_size);
    FIELD(sharp_coll_init_spec, progress_func);
    FIELD(sharp_coll_init_spec, group_channel_idx);
    FIELD(sharp_coll_init_spec, config);
    FIELD(sharp_coll_init_spec, oob_colls);
    FIELD(sharp_coll_init_spec, world_local_rank);
    FIELD(sharp_coll_init_spec, enable_thread_support);
    FIELD(sharp_coll_init_spec, oob_ctx);
    FIELD(sharp_coll_init_spec, reserved);

    STRUCT(sharp_coll_comm_init_spec);
    FIELD(sharp_coll_comm_init_spec, rank);
    FIELD(sharp_coll_comm_init_spec, size);
    FIELD(sharp_coll_comm_init_spec, oob_ctx);
    FIELD(sharp_coll_comm_init_spec, group_world_ranks);
    FIELD(sharp_coll_comm_init_spec, reserved);

    STRUCT(sharp_coll_caps);
    FIELD(sharp_coll_caps, sharp_pkt_version);
    FIELD(sharp_coll_caps, reserved);
    FIELD(sharp_coll_caps, support_mask);
    FIELD(sharp_coll_caps, support_mask.dtypes);
    FIELD(sharp_coll_caps, support_mask.tag_dtypes);
    FIELD(sharp_coll_caps, support_mask.reduce_ops);
    FIELD(sharp_coll_caps, support_mask.feature_mask);
    FIELD(sharp_coll_caps, support_mask.reserved);
    FIELD(sharp_coll_caps, resources);
    FIELD(sharp_coll_caps, resources.max_osts);
    FIELD(sharp_coll_caps, resources.user_data_per_ost);
    FIELD(sharp_coll_caps, resources.max_groups);
    FIELD(sharp_coll_caps, resources.max_group_channels);
    FIELD(sharp_coll_caps, resources.osts_per_group);

    STRUCT(sharp_data_iov);
    FIELD(sharp_data_iov, ptr);
    FIELD(sharp_data_iov, length);
    FIELD(sharp_data_iov, mem_handle);

    STRUCT(sharp_coll_data_desc);
    FIELD(sharp_coll_data_desc, type);
    FIELD(sharp_coll_data_desc, mem_type);
    FIELD(sharp_coll_data_desc, reserved);
    FIELD(sharp_coll_data_desc, buffer);
    FIELD(sharp_coll_data_desc, buffer.ptr);
    FIELD(sharp_coll_data_desc, buffer.length);
    FIELD(sharp_coll_data_desc, buffer.mem_handle);
    FIELD(sharp_coll_data_desc, iov);
    FIELD(sharp_coll_data_desc, iov.count);
    FIELD(sharp_coll_data_desc, iov.vector);

    STRUCT(sharp_coll_reduce_spec);
    FIELD(sharp_coll_reduce_spec, root);
    FIELD(sharp_coll_reduce_spec, sbuf_desc);
    FIELD(sharp_coll_reduce_spec, rbuf_desc);
    FIELD(sharp_coll_reduce_spec, dtype);
    FIELD(sharp_coll_reduce_spec, length);
    FIELD(sharp_coll_reduce_spec, op);
    FIELD(sharp_coll_reduce_spec, tag_dtype);
    FIELD(sharp_coll_reduce_spec, aggr_mode);
    FIELD(sharp_coll_reduce_spec, stream_lock_batch_size);
    FIELD(sharp_coll_reduce_spec, offset);
    FIELD(sharp_coll_reduce_spec, reserved);

    STRUCT(sharp_coll_bcast_spec);
    FIELD(sharp_coll_bcast_spec, root);
    FIELD(sharp_coll_bcast_spec, buf_desc);
    FIELD(sharp_coll_bcast_spec, size);
    FIELD(sharp_coll_bcast_spec, reserved);

    STRUCT(sharp_coll_gather_spec);
    FIELD(sharp_coll_gather_spec, sbuf_desc);
    FIELD(sharp_coll_gather_spec, rbuf_desc);
    FIELD(sharp_coll_gather_spec, dtype);
    FIELD(sharp_coll_gather_spec, size);
    FIELD(sharp_coll_gather_spec, offset);
    FIELD(sharp_coll_gather_spec, reserved);

    STRUCT(sharp_coll_reg_params);
    FIELD(sharp_coll_reg_params, field_mask);
    FIELD(sharp_coll_reg_params, dmabuf_fd);
    FIELD(sharp_coll_reg_params, dmabuf_offset);

    ENUM(sharp_datatype);
    CONST(sharp_datatype, SHARP_DTYPE_UNSIGNED);
    CONST(sharp_datatype, SHARP_DTYPE_INT);
    CONST(sharp_datatype, SHARP_DTYPE_UNSIGNED_LONG);
    CONST(sharp_datatype, SHARP_DTYPE_LONG);
    CONST(sharp_datatype, SHARP_DTYPE_FLOAT);
    CONST(sharp_datatype, SHARP_DTYPE_DOUBLE);
    CONST(sharp_datatype, SHARP_DTYPE_UNSIGNED_SHORT);
    CONST(sharp_datatype, SHARP_DTYPE_SHORT);
    CONST(sharp_datatype, SHARP_DTYPE_FLOAT_SHORT);
    CONST(sharp_datatype, SHARP_DTYPE_BFLOAT16);
    CONST(sharp_datatype, SHARP_DTYPE_UINT8);
    CONST(sharp_datatype, SHARP_DTYPE_INT8);
    CONST(sharp_datatype, SHARP_DTYPE_NULL);

    ENUM(sharp_reduce_op);
    CONST(sharp_reduce_op, SHARP_OP_MAX);
    CONST(sharp_reduce_op, SHARP_OP_MIN);
    CONST(sharp_reduce_op, SHARP_OP_SUM);
    CONST(sharp_reduce_op, SHARP_OP_PROD);
    CONST(sharp_reduce_op, SHARP_OP_LAND);
    CONST(sharp_reduce_op, SHARP_OP_BAND);
    CONST(sharp_reduce_op, SHARP_OP_LOR);
    CONST(sharp_reduce_op, SHARP_OP_BOR);
    CONST(sharp_reduce_op, SHARP_OP_LXOR);
    CONST(sharp_reduce_op, SHARP_OP_BXOR);
    CONST(sharp_reduce_op, SHARP_OP_MAXLOC);
    CONST(sharp_reduce_op, SHARP_OP_MINLOC);
    CONST(sharp_reduce_op, SHARP_OP_NULL);

    ENUM(sharp_error_no);
    CONST(sharp_error_no, SHARP_COLL_SUCCESS);
    CONST(sharp_error_no, SHARP_COLL_ERROR);
    CONST(sharp_error_no, SHARP_COLL_ENOT_SUPP);
    CONST(sharp_error_no, SHARP_COLL_ENOMEM);
    CONST(sharp_error_no, SHARP_COLL_EGROUP_ALLOC);
    CONST(sharp_error_no, SHARP_COLL_ECONN_TREE);
    CONST(sharp_error_no, SHARP_COLL_EGROUP_JOIN);
    CONST(sharp_error_no, SHARP_COLL_EQUOTA);
    CONST(sharp_error_no, SHARP_COLL_ESESS_INIT);
    CONST(sharp_error_no, SHARP_COLL_EDEV);
    CONST(sharp_error_no, SHARP_COLL_EINVAL);
    CONST(sharp_error_no, SHARP_COLL_EJOB_CREATE);
    CONST(sharp_error_no, SHARP_COLL_ETREE_INFO);
    CONST(sharp_error_no, SHARP_COLL_ENOTREE);
    CONST(sharp_error_no, SHARP_COLL_EGROUP_ID);
    CONST(sharp_error_no, SHARP_COLL_EOOB);
    CONST(sharp_error_no, SHARP_COLL_EGROUP_MCAST);
    CONST(sharp_error_no, SHARP_COLL_EGROUP_TRIM);
    CONST(sharp_error_no, SHARP_COLL_ELOCK_FAILED);
    CONST(sharp_error_no, SHARP_COLL_ELOCK_DENIED);
    CONST(sharp_error_no, SHARP_COLL_ENO_RESOURCE);

    ENUM(sharp_job_features);
    CONST(sharp_job_features, SHARP_FEATURE_LLT);
    CONST(sharp_job_features, SHARP_FEATURE_REPRODUCIBLE);
    CONST(sharp_job_features, SHARP_FEATURE_SAT);
    CONST(sharp_job_features, SHARP_FEATURE_SAT_EXCLUSIVE_LOCK);

    ENUM(sharp_aggregation_mode);
    CONST(sharp_aggregation_mode, SHARP_AGGREGATION_NONE);
    CONST(sharp_aggregation_mode, SHARP_AGGREGATION_DATAGRAM);
    CONST(sharp_aggregation_mode, SHARP_AGGREGATION_STREAMING);

    ENUM(sharp_data_buffer_type);
    CONST(sharp_data_buffer_type, SHARP_DATA_BUFFER);
    CONST(sharp_data_buffer_type, SHARP_DATA_IOV);

    ENUM(sharp_data_memory_type);
    CONST(sharp_data_memory_type, SHARP_MEM_TYPE_HOST);
    CONST(sharp_data_memory_type, SHARP_MEM_TYPE_CUDA);

#ifdef SHARP4J_EMU_HEADER
    /* Names (and for config_print_flags values) not given by the reference. */
    CONST(sharp_data_memory_type, SHARP_MEM_TYPE_LAST);

    ENUM(sharp_coll_config_flags);
    CONST(sharp_coll_config_flags, SHARP_COLL_HIDE_ERRORS);
    CONST(sharp_coll_config_flags, SHARP_COLL_DISABLE_LAZY_GROUP_RESOURCE_ALLOC);

    ENUM(config_print_flags);
    CONST(config_print_flags, SHARP_CONFIG_PRINT_CONFIG);
    CONST(config_print_flags, SHARP_CONFIG_PRINT_HEADER);
    CONST(config_print_flags, SHARP_CONFIG_PRINT_DOC);
    CONST(config_print_flags, SHARP_CONFIG_PRINT_HIDDEN);
#endif
    return 0;
}
