// How much an idle libnghttp2 server session holds by itself: 10,000
// sessions, each after the client preface and SETTINGS both ways, and the
// process's resident memory before and after (README, HTTP/2, Measured).
//   gcc -O2 perf/nghttp2_session_rss.c -o /tmp/nghttp2_session_rss -lnghttp2 && /tmp/nghttp2_session_rss
#include <nghttp2/nghttp2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static long rss(){FILE*f=fopen("/proc/self/statm","r");long a,b;fscanf(f,"%ld %ld",&a,&b);fclose(f);return b*4;}
int main(){
  nghttp2_session_callbacks* cb; nghttp2_session_callbacks_new(&cb);
  enum{N=10000}; static nghttp2_session* s[N];
  long before=rss();
  for(int i=0;i<N;i++){
  nghttp2_session_server_new(&s[i], cb, NULL);
  nghttp2_settings_entry iv[]={{NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS,128}};
  nghttp2_submit_settings(s[i], NGHTTP2_FLAG_NONE, iv, 1);
  const uint8_t* out; ssize_t n; while((n=nghttp2_session_mem_send(s[i],&out))>0){}
  const char pre[]="PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
  nghttp2_session_mem_recv(s[i],(const uint8_t*)pre,24);
  uint8_t settings[9]={0,0,0,4,0,0,0,0,0};
  nghttp2_session_mem_recv(s[i],settings,9);
  while((n=nghttp2_session_mem_send(s[i],&out))>0){}
  }
  printf("RSS per idle nghttp2 server session: %.2f KiB\n", (rss()-before)/(double)N);
}
