// SPDX-License-Identifier: Apache-2.0
// A minimal libmicrohttpd server for the HTTP client benchmark: every request (GET or POST, body
// read and discarded) gets the same small WeChat-style XML answer over a kept-alive connection.
// It binds 127.0.0.1 port 0, prints "PORT <n>", and exits when stdin closes.
//
//   gcc -O2 -o mhd-hello-client mhd-hello-client.c -lmicrohttpd
//   ./mhd-hello-client [threads]     (default 1 epoll thread)
#include <microhttpd.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char ANSWER[] =
    "<xml><return_code><![CDATA[SUCCESS]]></return_code><return_msg><![CDATA[OK]]></return_msg>"
    "<appid><![CDATA[wx2421b1c4370ec43b]]></appid><mch_id><![CDATA[10000100]]></mch_id>"
    "<nonce_str><![CDATA[IITRi8Iabbblz1Jc]]></nonce_str><result_code><![CDATA[SUCCESS]]></result_code>"
    "<prepay_id><![CDATA[wx201411101639507cbf6ffd8b0779950874]]></prepay_id>"
    "<trade_type><![CDATA[APP]]></trade_type></xml>";

static struct MHD_Response *answer;

static enum MHD_Result handle(void *cls, struct MHD_Connection *connection, const char *url,
                              const char *method, const char *version, const char *upload_data,
                              size_t *upload_data_size, void **state) {
    (void)cls; (void)url; (void)method; (void)version; (void)upload_data;
    static int marker;
    if (*state == NULL) {  // first call: headers only
        *state = &marker;
        return MHD_YES;
    }
    if (*upload_data_size != 0) {  // discard the body as it arrives
        *upload_data_size = 0;
        return MHD_YES;
    }
    return MHD_queue_response(connection, MHD_HTTP_OK, answer);
}

int main(int argc, char **argv) {
    unsigned int threads = argc > 1 ? (unsigned int)atoi(argv[1]) : 1;
    answer = MHD_create_response_from_buffer(strlen(ANSWER), (void *)ANSWER, MHD_RESPMEM_PERSISTENT);
    MHD_add_response_header(answer, "Content-Type", "text/xml; charset=utf-8");
    struct sockaddr_in address;
    memset(&address, 0, sizeof address);
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = 0;
    struct MHD_Daemon *daemon = MHD_start_daemon(
        MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_TURBO, 0, NULL, NULL, &handle, NULL,
        MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&address,
        MHD_OPTION_THREAD_POOL_SIZE, threads,
        MHD_OPTION_CONNECTION_LIMIT, 4096u,
        MHD_OPTION_CONNECTION_TIMEOUT, 60u,
        MHD_OPTION_END);
    if (daemon == NULL) {
        fprintf(stderr, "MHD_start_daemon failed\n");
        return 1;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    printf("PORT %u\n", (unsigned int)info->port);
    fflush(stdout);
    char buffer[64];
    while (read(STDIN_FILENO, buffer, sizeof buffer) > 0) {
    }
    MHD_stop_daemon(daemon);
    MHD_destroy_response(answer);
    return 0;
}
